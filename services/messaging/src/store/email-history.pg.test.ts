import { randomUUID } from 'node:crypto';
import type { Pool } from '@svc/lib/db';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { EmailHistory } from '../domain/email-history.js';
import { EmailsStore, type NewEmail } from './emails-store.js';
import { migrations } from './migrations.js';
import { testEmail } from './test-emails.js';

// email_attempts written with the delivery outcomes, and GET /emails' filters and pages, on a real PostgreSQL.

const PROJECT = randomUUID();
const OTHER = randomUUID();

let db: TestDatabase;
let pool: Pool;
let store: EmailsStore;
let history: EmailHistory;

const email = (over: Partial<NewEmail> = {}): NewEmail => testEmail(PROJECT, over);

async function queue(emails: NewEmail[]): Promise<void> {
  const client = await pool.connect();
  try {
    await store.insertMany(client, emails);
  } finally {
    client.release();
  }
}

beforeAll(async () => {
  db = await createTestDatabase('messaging_email_history', migrations);
  pool = db.pool;
  store = new EmailsStore(pool);
  history = new EmailHistory(store);
});

afterAll(() => db.drop());

beforeEach(async () => {
  await pool.query('DELETE FROM emails');
  await pool.query('DELETE FROM email_attempts');
});

describe('recordOutcomes writes one attempt per outcome with the SMTP answer', () => {
  test('retry, then sent; bounced; given up with the code after its prefix; a lost lease records nothing', async () => {
    const [a, b, c, d] = [email(), email(), email(), email()];
    await queue([a, b, c, d]);
    await store.claimDue(10, 60);
    await store.recordOutcomes(pool, {
      sent: [],
      retry: [{ id: a.id, delayMs: 0, error: '451 4.7.1 Greylisted' }],
      bounced: [{ id: b.id, reason: '550 5.1.1 No such user' }],
      failed: [{ id: c.id, reason: 'gave up after 1 attempts: 421 4.3.0 Try later' }],
    });
    await store.claimDue(10, 60);
    // d's lease went to another worker meanwhile: its outcome changes nothing and records nothing.
    await pool.query(`UPDATE emails SET status = 'queued' WHERE id = $1`, [d.id]);
    const sent = [a.id, d.id].map((id) => ({ id, response: '250 2.0.0 Ok: queued' }));
    await store.recordOutcomes(pool, { sent, retry: [], bounced: [], failed: [] });

    const detail = await history.get(PROJECT, a.id);
    expect(detail.attempts.map((x) => [x.attempt, x.outcome, x.smtp_code, x.smtp_response])).toEqual([
      [1, 'retry', 451, '451 4.7.1 Greylisted'],
      [2, 'sent', 250, '250 2.0.0 Ok: queued'],
    ]);
    expect(detail.timeline.map((t) => t.type)).toEqual(['queued', 'deferred', 'sent']);
    expect((await store.attempts(b.id)).map((x) => [x.outcome, x.smtp_code])).toEqual([['bounced', 550]]);
    expect((await store.attempts(c.id)).map((x) => [x.outcome, x.smtp_code])).toEqual([['failed', 421]]);
    expect(await store.attempts(d.id)).toEqual([]);
  });
});

describe('EmailHistory.list', () => {
  test('filters by status, contact, template, campaign and dates; pages by cursor; never another project', async () => {
    const contact = randomUUID();
    const template = randomUUID();
    const campaign = randomUUID();
    const rows = [
      email({ contact_id: contact }),
      email({ template_id: template }),
      email({ campaign_id: campaign, status: 'suppressed' }),
      email({ project_id: OTHER, contact_id: contact }),
    ];
    await queue(rows);
    await pool.query(`UPDATE emails SET created_at = '2025-06-01T12:00:00Z' WHERE id = $1`, [rows[0].id]);
    const ids = async (q: Record<string, string>) => (await history.list(PROJECT, q)).items.map((i) => i.email.id);

    expect((await history.list(PROJECT, {})).total).toBe(3);
    expect(await ids({ contactId: contact })).toEqual([rows[0].id]);
    expect(await ids({ templateId: template })).toEqual([rows[1].id]);
    expect(await ids({ campaignId: campaign })).toEqual([rows[2].id]);
    expect(await ids({ status: 'suppressed' })).toEqual([rows[2].id]);
    expect(await ids({ from: '2025-06-01', to: '2025-06-01' })).toEqual([rows[0].id]);
    expect(await ids({ to: '2025-05-31' })).toEqual([]);

    const first = await history.list(PROJECT, { limit: '2' });
    expect(first).toMatchObject({ hasMore: true, total: 3 });
    const second = await history.list(PROJECT, { limit: '2', cursor: first.cursor });
    expect(second).toMatchObject({ hasMore: false, total: 0, cursor: '' });
    const seen = [...first.items, ...second.items].map((i) => i.email.id);
    expect(new Set(seen)).toEqual(new Set(rows.slice(0, 3).map((r) => r.id)));
    await expect(history.get(PROJECT, rows[3].id)).rejects.toMatchObject({ status: 404 });
  });
});
