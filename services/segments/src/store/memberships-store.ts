import type { Queryable } from '@svc/lib/db';

/** Stored membership of tracked segments; each write answers the rows it really changed. */
export class MembershipsStore {
  async members(db: Queryable, segmentId: string): Promise<string[]> {
    const { rows } = await db.query<{ contact_id: string }>(
      'SELECT contact_id FROM memberships WHERE segment_id = $1',
      [segmentId],
    );
    return rows.map((r) => r.contact_id);
  }

  /** Whether any membership of the segment is stored. */
  async any(db: Queryable, segmentId: string): Promise<boolean> {
    const { rowCount } = await db.query('SELECT 1 FROM memberships WHERE segment_id = $1 LIMIT 1', [segmentId]);
    return (rowCount ?? 0) > 0;
  }

  /** The segments (of `segmentIds`) that hold the contact. */
  async segmentsOf(db: Queryable, contactId: string, segmentIds: string[]): Promise<string[]> {
    const { rows } = await db.query<{ segment_id: string }>(
      'SELECT segment_id FROM memberships WHERE contact_id = $1 AND segment_id = ANY($2::uuid[])',
      [contactId, segmentIds],
    );
    return rows.map((r) => r.segment_id);
  }

  async add(db: Queryable, segmentId: string, contactIds: string[]): Promise<string[]> {
    if (!contactIds.length) return [];
    const { rows } = await db.query<{ contact_id: string }>(
      `INSERT INTO memberships (segment_id, contact_id) SELECT $1, unnest($2::uuid[])
       ON CONFLICT DO NOTHING RETURNING contact_id`,
      [segmentId, contactIds],
    );
    return rows.map((r) => r.contact_id);
  }

  async remove(db: Queryable, segmentId: string, contactIds: string[]): Promise<string[]> {
    if (!contactIds.length) return [];
    const { rows } = await db.query<{ contact_id: string }>(
      'DELETE FROM memberships WHERE segment_id = $1 AND contact_id = ANY($2::uuid[]) RETURNING contact_id',
      [segmentId, contactIds],
    );
    return rows.map((r) => r.contact_id);
  }

  /** A deleted contact leaves every tracked segment (no event: its events are gone with it). */
  async removeContact(db: Queryable, contactId: string): Promise<string[]> {
    const { rows } = await db.query<{ segment_id: string }>(
      'DELETE FROM memberships WHERE contact_id = $1 RETURNING segment_id',
      [contactId],
    );
    return rows.map((r) => r.segment_id);
  }

  async clear(db: Queryable, segmentId: string): Promise<void> {
    await db.query('DELETE FROM memberships WHERE segment_id = $1', [segmentId]);
  }
}
