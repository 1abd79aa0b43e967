import type { Pool, Queryable } from '@svc/lib/db';

export interface SendAttachment {
  filename: string;
  content: Uint8Array;
  contentType: string;
  contentId?: string;
  disposition: 'attachment' | 'inline';
}

/** Attachments of a send, stored once for all of its emails (migration 004). */
export class SendAttachmentsStore {
  constructor(private readonly pool: Pool) {}

  async insert(tx: Queryable, sendId: string, attachments: SendAttachment[]): Promise<void> {
    if (!attachments.length) return;
    await tx.query(
      `INSERT INTO send_attachments (send_id, position, filename, content, content_type, content_id, disposition)
       SELECT $1, a.position, a.filename, a.content, a.content_type, a.content_id, a.disposition
       FROM unnest($2::int[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::text[])
         AS a(position, filename, content, content_type, content_id, disposition)`,
      [
        sendId,
        attachments.map((_, i) => i),
        attachments.map((a) => a.filename),
        attachments.map((a) => Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength)),
        attachments.map((a) => a.contentType),
        attachments.map((a) => a.contentId ?? null),
        attachments.map((a) => a.disposition),
      ],
    );
  }

  /** The attachments of these sends, in their order, by send id (sends without any are absent). */
  async bySends(sendIds: string[]): Promise<Map<string, SendAttachment[]>> {
    const bySend = new Map<string, SendAttachment[]>();
    if (!sendIds.length) return bySend;
    const { rows } = await this.pool.query<{
      send_id: string;
      filename: string;
      content: Buffer;
      content_type: string;
      content_id: string | null;
      disposition: 'attachment' | 'inline';
    }>(
      `SELECT send_id, filename, content, content_type, content_id, disposition FROM send_attachments
       WHERE send_id = ANY($1::uuid[]) ORDER BY send_id, position`,
      [sendIds],
    );
    for (const r of rows) {
      const list = bySend.get(r.send_id) ?? [];
      list.push({
        filename: r.filename,
        content: r.content,
        contentType: r.content_type,
        ...(r.content_id ? { contentId: r.content_id } : {}),
        disposition: r.disposition,
      });
      bySend.set(r.send_id, list);
    }
    return bySend;
  }
}
