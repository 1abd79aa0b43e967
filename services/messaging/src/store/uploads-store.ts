import type { Pool } from '@svc/lib/db';

export interface UploadRow {
  id: string;
  project_id: string;
  content_type: string;
  size: number;
  created_at: Date;
}

/** Uploaded images (migration 009), bytes in the database. */
export class UploadsStore {
  constructor(private readonly pool: Pool) {}

  async insert(u: { id: string; projectId: string; contentType: string; bytes: Buffer }): Promise<UploadRow> {
    const { rows } = await this.pool.query<UploadRow>(
      `INSERT INTO uploads (id, project_id, content_type, bytes, size) VALUES ($1, $2, $3, $4, $5)
       RETURNING id, project_id, content_type, size, created_at`,
      [u.id, u.projectId, u.contentType, u.bytes, u.bytes.length],
    );
    return rows[0]!;
  }

  async get(id: string): Promise<(UploadRow & { bytes: Buffer }) | undefined> {
    const { rows } = await this.pool.query<UploadRow & { bytes: Buffer }>(
      'SELECT id, project_id, content_type, size, created_at, bytes FROM uploads WHERE id = $1',
      [id],
    );
    return rows[0];
  }
}
