import { call, expectEnvelope, newTenant, type Answer } from './support/client.js';
import { importCsv } from './support/csv.js';

const CAP = 500;

function expectTooManyFields(res: Answer): void {
  expectEnvelope(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.errors[0]).toMatchObject({ field: 'data', code: 'too_many_fields' });
}

describe('custom fields per project', () => {
  test(`${CAP} fields fill the cap (listed); one more is a 422 on every write path, changing nothing`, async () => {
    const custom = (fields: Answer) => fields.body.fields.filter((f: { isCustom: boolean }) => f.isCustom);
    const t = await newTenant();
    const key = { key: t.secretKey };
    const data = Object.fromEntries(Array.from({ length: CAP }, (_, i) => [`f${i}`, i]));
    const first = await call('POST', '/contacts', { email: 'cap@example.com', data }, key);
    expect(first.status).toBe(201);

    const fields = await call('GET', '/contacts/fields', undefined, key);
    expect(fields.status).toBe(200);
    expect(custom(fields)).toHaveLength(CAP);
    expect(fields.body.fields).toContainEqual({ field: 'data.f499', type: 'number', isCustom: true, coverage: 1 });

    expectTooManyFields(await call('POST', '/contacts', { email: 'new@example.com', data: { extra: 1 } }, key));
    expectTooManyFields(await call('PATCH', `/contacts/${first.body.id}`, { data: { extra: 1, f0: 'changed' } }, key));
    const track = { email: 'cap@example.com', event: 'seen', data: { extra: 1 } };
    expectTooManyFields(await call('POST', '/v1/track', track, { key: t.publicKey }));
    const nested = { email: 'nested@example.com', data: { profile: { tier: 'gold' } } };
    expectTooManyFields(await call('POST', '/contacts', nested, key));

    const csv = await importCsv(t, 'email,f1,extra\ncsv-old@example.com,7,\ncsv-new@example.com,8,x\n');
    expect(csv).toMatchObject({ status: 'completed', imported: 1, skipped: 1 });
    expect(csv.errors).toEqual([{ row: 3, email: 'csv-new@example.com', reason: 'too_many_fields' }]);

    // Nothing of the refused writes was stored: no contact, no data change, no event, no field.
    const list = await call('GET', '/contacts?sort=email&dir=asc', undefined, key);
    expect(list.body.data.map((c: { email: string }) => c.email)).toEqual(['cap@example.com', 'csv-old@example.com']);
    expect((await call('GET', `/contacts/${first.body.id}`, undefined, key)).body.data).toEqual(data);
    expect((await call('GET', '/events', undefined, key)).body.data).toEqual([]);
    expect(custom(await call('GET', '/contacts/fields', undefined, key))).toHaveLength(CAP);

    // Existing fields keep working, one-off values are not fields, and deleting a field frees a slot.
    expect((await call('POST', '/contacts', { email: 'more@example.com', data: { f1: 2 } }, key)).status).toBe(201);
    const coupon = { value: 'X', persistent: false };
    const oneOff = { email: 'cap@example.com', event: 'seen', data: { f2: 3, coupon } };
    expect((await call('POST', '/v1/track', oneOff, { key: t.publicKey })).status).toBe(200);
    expect((await call('DELETE', '/contacts/fields/data.f0', undefined, key)).status).toBe(200);
    expect((await call('PATCH', `/contacts/${first.body.id}`, { data: { extra: 1 } }, key)).status).toBe(200);
    expectTooManyFields(await call('PATCH', `/contacts/${first.body.id}`, { data: { another: 1 } }, key));
  });
});
