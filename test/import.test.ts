import { call, eventually, expectEnvelope, newTenant, type Tenant } from './support/client.js';
import { csvForm, importCsv } from './support/csv.js';

const byEmail = async (t: Tenant, email: string) =>
  (await call('POST', '/contacts/lookup', { emails: [email] }, { key: t.secretKey })).body.found[0];
const full = async (t: Tenant, email: string) =>
  (await call('GET', `/contacts/${(await byEmail(t, email)).id}`, undefined, { key: t.secretKey })).body;
const fieldTypes = async (t: Tenant) => {
  const fields = await call('GET', '/contacts/fields', undefined, { key: t.secretKey });
  return Object.fromEntries(fields.body.fields.map((f: { field: string; type: string }) => [f.field, f.type]));
};

describe('CSV import', () => {
  test('types cells per SPEC.md; drops reserved columns; bad emails by row; new contacts are subscribed', async () => {
    const t = await newTenant();
    const csv = [
      'email,name,active,paid,age,score,zip,phone,sci,joined,seen,id,subscribed,profile.tier',
      'one@example.com,One,true,no,42,3.5,00123,+4412345,1e5,2024-01-02,2024-01-02T10:00:00Z,evil,false,gold',
      'not-an-email,Bad,true,,,,,,,,,,,',
      'two@example.com,"Two, Jr.",YES,false,,0.5,0,,,,,,,',
      ',,,,,,,,,,,,,',
    ].join('\n');
    const job = await importCsv(t, csv);
    expect(job).toMatchObject({ status: 'completed', totalRows: 3, imported: 2, updated: 0, skipped: 1 });
    expect(job.errors).toEqual([{ row: 3, email: 'not-an-email', reason: 'invalid_email' }]);
    const one = await full(t, 'one@example.com');
    expect(one.subscribed).toBe(true);
    expect(one.data).toEqual({
      name: 'One',
      active: true,
      paid: false,
      age: 42,
      score: 3.5,
      zip: '00123',
      phone: '+4412345',
      sci: '1e5',
      joined: '2024-01-02',
      seen: '2024-01-02T10:00:00Z',
      profile: { tier: 'gold' },
    });
    expect((await full(t, 'two@example.com')).data).toEqual({
      name: 'Two, Jr.',
      active: true,
      paid: false,
      score: 0.5,
      zip: 0,
    });
    const types = await fieldTypes(t);
    expect(types).toMatchObject({
      'data.age': 'number',
      'data.active': 'boolean',
      'data.joined': 'date',
      'data.seen': 'date',
      'data.zip': 'string',
      'data.profile.tier': 'string',
    });
  });

  test('BOM, quoted commas, CRLF parse; re-run updates in place; duplicates in one file make one contact', async () => {
    const t = await newTenant();
    const csv = '\uFEFFEmail,city\r\ndup@example.com,"Paris, FR"\r\nDUP@example.com,Lyon\r\nother@example.com,Nice\r\n';
    const first = await importCsv(t, csv);
    expect(first).toMatchObject({ status: 'completed', totalRows: 3, imported: 2, updated: 1, skipped: 0 });
    expect((await full(t, 'dup@example.com')).data).toEqual({ city: 'Lyon' });
    await call(
      'PATCH',
      `/contacts/${(await byEmail(t, 'other@example.com')).id}`,
      { subscribed: false, data: { kept: 1 } },
      { key: t.secretKey },
    );
    const again = await importCsv(t, csv);
    expect(again).toMatchObject({ status: 'completed', imported: 0, updated: 3 });
    const list = await call('GET', '/contacts', undefined, { key: t.secretKey });
    expect(list.body.total).toBe(2);
    const other = await full(t, 'other@example.com');
    expect(other).toMatchObject({ subscribed: false, data: { city: 'Nice', kept: 1 } });
  });

  test('a file mixing new and stored contacts: each email patched in file order, stored state kept', async () => {
    const t = await newTenant();
    const stored = await call(
      'POST',
      '/contacts',
      {
        email: 'Kept@Example.com',
        subscribed: false,
        data: { plan: 'free', profile: { tier: 'bronze', since: 2019 } },
      },
      { key: t.secretKey },
    );
    expect(stored.status).toBe(201);
    const csv = [
      'email,plan,profile.tier,seats',
      'new@example.com,pro,,1',
      'kept@example.com,team,gold,',
      'NEW@example.com,,silver,2',
      'nul@example.com,a\u0000b,,',
      'KEPT@example.com,,,5',
      'other@example.com,free,,',
    ].join('\n');
    const job = await importCsv(t, csv);
    expect(job).toMatchObject({ status: 'completed', totalRows: 6, imported: 2, updated: 3, skipped: 1 });
    expect(job.errors).toEqual([{ row: 5, email: 'nul@example.com', reason: 'invalid_character' }]);
    expect(await full(t, 'new@example.com')).toMatchObject({
      email: 'new@example.com',
      subscribed: true,
      data: { plan: 'pro', seats: 2, profile: { tier: 'silver' } },
    });
    expect(await full(t, 'kept@example.com')).toMatchObject({
      id: stored.body.id,
      email: 'Kept@Example.com',
      subscribed: false,
      data: { plan: 'team', seats: 5, profile: { tier: 'gold', since: 2019 } },
    });
    expect((await full(t, 'other@example.com')).data).toEqual({ plan: 'free' });
    expect(await byEmail(t, 'nul@example.com')).toBeUndefined();
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total).toBe(3);
    const types = await fieldTypes(t);
    expect(types).toMatchObject({ 'data.plan': 'string', 'data.seats': 'number', 'data.profile.tier': 'string' });
  });

  test('files over 5 MB, without an email column, not UTF-8, or missing are refused with a clear error', async () => {
    const t = await newTenant();
    const big = Buffer.alloc(5 * 1024 * 1024 + 1, 'a');
    const tooBig = await call('POST', '/contacts/import', undefined, { key: t.secretKey, raw: csvForm(big) });
    expectEnvelope(tooBig, 413, 'PAYLOAD_TOO_LARGE');
    expect(tooBig.body.error.message).toMatch(/5 MB/);
    expectEnvelope(
      await call('POST', '/contacts/import', undefined, { key: t.secretKey, raw: csvForm('name,city\nA,B\n') }),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call('POST', '/contacts/import', undefined, {
        key: t.secretKey,
        raw: csvForm(Buffer.from([0x65, 0x6d, 0x61, 0x69, 0x6c, 0x0a, 0xff, 0xfe])),
      }),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call('POST', '/contacts/import', undefined, { key: t.secretKey, raw: new FormData() }),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call('GET', '/contacts/import/00000000-0000-4000-8000-000000000000', undefined, { key: t.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total).toBe(0);
  });

  test("another project's import job is a 404", async () => {
    const a = await newTenant();
    const b = await newTenant();
    const start = await call('POST', '/contacts/import', undefined, {
      key: a.secretKey,
      raw: csvForm('email\nx@example.com\n'),
    });
    expectEnvelope(
      await call('GET', `/contacts/import/${start.body.jobId}`, undefined, { key: b.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
  });
});

describe('CSV import limits', () => {
  test('a row breaking custom-data rules (64 KiB, key length, depth) or with a NUL fails alone, by row', async () => {
    const t = await newTenant();
    const longKey = 'k'.repeat(256);
    const deep = Array.from({ length: 11 }, (_, i) => `l${i}`).join('.');
    const csv = [
      `email,note,${longKey},${deep}`,
      'ok@example.com,hello,,',
      `big@example.com,${'x'.repeat(70 * 1024)},,`,
      'nul@example.com,a\u0000b,,',
      'key@example.com,,v,',
      'deep@example.com,,,v',
      `${'a'.repeat(1000)}\u0000@example.com,x,,`,
    ].join('\n');
    const job = await importCsv(t, csv);
    expect(job).toMatchObject({ status: 'completed', totalRows: 6, processed: 6, imported: 1, updated: 0, skipped: 5 });
    expect(job.errors.map((e: { row: number; reason: string }) => [e.row, e.reason])).toEqual([
      [3, 'too_big'],
      [4, 'invalid_character'],
      [5, 'too_big'],
      [6, 'too_big'],
      [7, 'invalid_email'],
    ]);
    expect(job.errors[4].email).toHaveLength(320);
    const list = await call('GET', '/contacts', undefined, { key: t.secretKey });
    const stored = list.body.data.map((c: { email: string; data: unknown }) => [c.email, c.data]);
    expect(stored).toEqual([['ok@example.com', { note: 'hello' }]]);
  });

  test('a header over 1,000 columns is a 400 and stores nothing', async () => {
    const t = await newTenant();
    const header = ['email', ...Array.from({ length: 1000 }, (_, i) => `c${i}`)].join(',');
    const form = csvForm(`${header}\na@example.com\n`);
    const res = await call('POST', '/contacts/import', undefined, { key: t.secretKey, raw: form });
    expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(res.body.error.message).toMatch(/1000 columns/);
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total).toBe(0);
  });

  test('columns writing one place (plan twice; a and a.b) store nothing: a 400, or a failed job', async () => {
    const t = await newTenant();
    const res = await call('POST', '/contacts/import', undefined, {
      key: t.secretKey,
      raw: csvForm('email,plan,"plan"\ntwice@example.com,pro,free\n'),
    });
    expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(res.body.error.message).toBe('The CSV header names the column "plan" twice');
    const nested = await call('POST', '/contacts/import', undefined, {
      key: t.secretKey,
      raw: csvForm('email,profile.tier,profile\nnested@example.com,gold,x\n'),
    });
    expectEnvelope(nested, 400, 'BAD_REQUEST');
    expect(nested.body.error.message).toBe('The CSV columns "profile" and "profile.tier" both write data.profile');
    // A quoted comma hides the header's real cells from the check on submit: the job reads them.
    const job = await importCsv(t, '"a,b",email,plan,plan\nx,quoted@example.com,pro,free\n');
    expect(job).toMatchObject({ status: 'failed', processed: 0, failure: expect.stringMatching(/"plan" twice/) });
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total).toBe(0);
  });

  test('form fields beyond the file are bounded: too many, too long, too many parts or files', async () => {
    const t = await newTenant();
    const upload = (extra: (form: FormData) => void) => {
      const form = csvForm('email\nform@example.com\n');
      extra(form);
      return call('POST', '/contacts/import', undefined, { key: t.secretKey, raw: form });
    };
    const manyFields = await upload((f) => Array.from({ length: 11 }, (_, i) => f.append(`f${i}`, 'x')));
    expectEnvelope(manyFields, 413, 'PAYLOAD_TOO_LARGE');
    expect(manyFields.body.error.message).toMatch(/At most 1[01] form/);
    const longField = await upload((f) => f.append('note', 'x'.repeat(1025)));
    expectEnvelope(longField, 413, 'PAYLOAD_TOO_LARGE');
    expect(longField.body.error.message).toMatch(/1024 bytes/);
    expectEnvelope(await upload((f) => f.append('file', new Blob(['email\n']), 'two.csv')), 400, 'BAD_REQUEST');
    const malformed = await call('POST', '/contacts/import', undefined, {
      key: t.secretKey,
      raw: '--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nemail\n', // no closing boundary
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
    });
    expectEnvelope(malformed, 400, 'BAD_REQUEST');
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total).toBe(0);
    // A few small fields besides the file are fine.
    expect((await upload((f) => f.append('source', 'crm'))).status).toBe(202);
  });

  test('a job that fails halfway (a malformed line) reports counts that match what was stored', async () => {
    const t = await newTenant();
    const rows = Array.from({ length: 4600 }, (_, i) => `row${i}@example.com,${i}`);
    const csv = ['email,n', 'not-an-email,1', ...rows, 'bad@example.com,a"b', 'after@example.com,1'].join('\n');
    const job = await importCsv(t, csv);
    expect(job.status).toBe('failed');
    expect(job.failure).toMatch(/malformed at line 4603/);
    const stored = (await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total;
    expect(job).toMatchObject({ imported: stored, updated: 0, skipped: 1, processed: stored + 1 });
    expect(job.totalRows).toBe(stored + 1);
    expect(stored).toBe(4600); // every row before the bad line, none after it
    expect(await byEmail(t, 'after@example.com')).toBeUndefined();
  });
});

describe('bulk jobs', () => {
  test('bulk unsubscribe, subscribe and delete by id, queued and polled; flips emit contact events', async () => {
    const t = await newTenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await call('POST', '/contacts', { email: `bulk${i}@example.com` }, { key: t.secretKey })).body.id);
    const missing = '00000000-0000-4000-8000-000000000000';
    const run = async (op: string, contactIds: string[]) => {
      const start = await call('POST', `/contacts/bulk-${op}`, { contactIds }, { key: t.secretKey });
      expect(start.status).toBe(202);
      return eventually(async () => {
        const job = await call('GET', `/contacts/bulk/${start.body.jobId}`, undefined, { key: t.secretKey });
        return job.body.status === 'completed' ? job.body : undefined;
      });
    };
    const unsub = await run('unsubscribe', [...ids, missing]);
    expect(unsub).toMatchObject({ operation: 'unsubscribe', total: 4, succeeded: 3, notFound: [missing] });
    const after = await call('GET', '/contacts?subscribed=false', undefined, { key: t.secretKey });
    expect(after.body.total).toBe(3);
    const events = await call('GET', `/events/contact/${ids[0]}`, undefined, { key: t.secretKey });
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['contact.unsubscribed']);
    await run('subscribe', [ids[0]]);
    expect((await call('GET', `/contacts/${ids[0]}`, undefined, { key: t.secretKey })).body.subscribed).toBe(true);
    await run('delete', ids.slice(1));
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).body.total).toBe(1);
  });

  test('bad bulk input: not an array, over 1000 ids, invalid ids', async () => {
    const t = await newTenant();
    expectEnvelope(
      await call('POST', '/contacts/bulk-delete', { contactIds: 'x' }, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await call('POST', '/contacts/bulk-delete', { contactIds: [] }, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    const many = Array.from({ length: 1001 }, () => crypto.randomUUID());
    expectEnvelope(
      await call('POST', '/contacts/bulk-delete', { contactIds: many }, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    const bad = await call('POST', '/contacts/bulk-subscribe', { contactIds: ['nope'] }, { key: t.secretKey });
    expectEnvelope(bad, 422, 'VALIDATION_ERROR');
    expect(bad.body.error.errors[0].field).toBe('contactIds.0');
  });
});
