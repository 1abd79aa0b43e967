import type { Queryable } from './db.js';

/**
 * `enqueue` for many messages in one statement: hot paths (the mail delivery worker)
 * record a whole batch of state changes in one transaction. Same table and relay as
 * lib/outbox.ts, so ordering and dedupe are unchanged.
 */
export async function enqueueMany(tx: Queryable, messages: { subject: string; payload: unknown }[]): Promise<void> {
  if (!messages.length) return;
  await tx.query(
    'INSERT INTO outbox (subject, payload) SELECT s, p::jsonb FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(s, p, n) ORDER BY n',
    [messages.map((m) => m.subject), messages.map((m) => JSON.stringify(m.payload))],
  );
  await tx.query('NOTIFY outbox');
}
