import type { Pool } from '@svc/lib/db';

export interface UploadRow {
  id: string;
  project_id: string;
  content_type: string;
  size: number;
  created_at: Date;
  /** Where the bytes are: this database, or the S3 bucket (key `uploads/<id>`). */
  storage: 'database' | 's3';
}

/** Uploaded images (migration 009), bytes in the database. */
export class UploadsStore {
  constructor(private readonly pool: Pool) {}

  /** `bytes` null: they are in the bucket (`size` is theirs). */
  async insert(u: {
    id: string;
    projectId: string;
    contentType: string;
    bytes: Buffer | null;
    size: number;
  }): Promise<UploadRow> {
    const { rows } = await this.pool.query<UploadRow>(
      `INSERT INTO uploads (id, project_id, content_type, bytes, size, storage) VALUES ($1, $2, $3, $4, $5, $6)
       RETURNING id, project_id, content_type, size, created_at, storage`,
      [u.id, u.projectId, u.contentType, u.bytes, u.size, u.bytes ? 'database' : 's3'],
    );
    return rows[0]!;
  }

  async get(id: string): Promise<(UploadRow & { bytes: Buffer | null }) | undefined> {
    const { rows } = await this.pool.query<UploadRow & { bytes: Buffer | null }>(
      'SELECT id, project_id, content_type, size, created_at, storage, bytes FROM uploads WHERE id = $1',
      [id],
    );
    return rows[0];
  }
}
