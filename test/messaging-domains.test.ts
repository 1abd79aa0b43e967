import { call, expectEnvelope, newTenant } from './support/client.js';
import { publishDns, uniqueDomain, verifiedDomain } from './support/messaging.js';

describe('sender domains', () => {
  test('POST /domains returns verification, DKIM and SPF records; GET verify checks them via DNS_SERVERS', async () => {
    const t = await newTenant();
    const domain = uniqueDomain();
    const created = await call(
      'POST',
      '/domains',
      { domain: domain.toUpperCase(), projectId: t.projectId },
      { key: t.secretKey },
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ domain, projectId: t.projectId, status: 'pending', verified: false });
    const byPurpose = Object.fromEntries(created.body.records.map((r: { purpose: string }) => [r.purpose, r]));
    expect(byPurpose.verification).toMatchObject({ type: 'TXT', name: `_svc-verification.${domain}` });
    expect(byPurpose.dkim).toMatchObject({ type: 'TXT', name: `${created.body.dkimSelector}._domainkey.${domain}` });
    expect(byPurpose.dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    expect(byPurpose.spf).toMatchObject({
      type: 'TXT',
      name: domain,
      value: expect.stringMatching(/^v=spf1 include:\S+ ~all$/),
    });

    // Nothing published yet: still pending.
    const before = await call('GET', `/domains/${created.body.id}/verify`, undefined, { key: t.secretKey });
    expect(before.status).toBe(200);
    expect(before.body.status).toBe('pending');
    expect(before.body.lastCheckedAt).not.toBeNull();

    // The verification record alone is not enough: mail must be signable with the published key.
    await publishDns(byPurpose.verification.name, 'TXT', byPurpose.verification.value);
    const half = await call('GET', `/domains/${created.body.id}/verify`, undefined, { key: t.secretKey });
    expect(half.body.status).toBe('pending');
    expect(half.body.records.find((r: { purpose: string }) => r.purpose === 'verification').verified).toBe(true);

    await publishDns(byPurpose.dkim.name, 'TXT', byPurpose.dkim.value);
    const after = await call('GET', `/domains/${created.body.id}/verify`, undefined, { key: t.secretKey });
    expect(after.body).toMatchObject({ status: 'verified', verified: true });
    expect(after.body.verifiedAt).not.toBeNull();

    const list = await call('GET', `/domains/project/${t.projectId}`, undefined, { key: t.secretKey });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([expect.objectContaining({ id: created.body.id, status: 'verified' })]);
  });

  test('bad domain names are 422; the same domain twice in a project is 409', async () => {
    const t = await newTenant();
    for (const domain of ['', 'localhost', 'not a domain', 'a..b.com', 'http://x.com', 42]) {
      const res = await call('POST', '/domains', { domain, projectId: t.projectId }, { key: t.secretKey });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors[0].field).toBe('domain');
    }
    const domain = uniqueDomain();
    expect((await call('POST', '/domains', { domain, projectId: t.projectId }, { key: t.secretKey })).status).toBe(201);
    expectEnvelope(
      await call('POST', '/domains', { domain, projectId: t.projectId }, { key: t.secretKey }),
      409,
      'CONFLICT',
    );
  });

  test("another project's id, in the body, the path or as a domain id, is a 404; a public key is a 401", async () => {
    const t = await newTenant();
    const other = await newTenant();
    const theirs = await call(
      'POST',
      '/domains',
      { domain: uniqueDomain(), projectId: other.projectId },
      { key: other.secretKey },
    );
    expectEnvelope(
      await call('POST', '/domains', { domain: uniqueDomain(), projectId: other.projectId }, { key: t.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('GET', `/domains/project/${other.projectId}`, undefined, { key: t.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('GET', `/domains/${theirs.body.id}/verify`, undefined, { key: t.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('DELETE', `/domains/${theirs.body.id}`, undefined, { key: t.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('GET', '/domains/not-a-uuid/verify', undefined, { key: t.secretKey }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('GET', `/domains/project/${t.projectId}`, undefined, { key: t.publicKey }),
      401,
      'INVALID_API_KEY',
    );
  });

  test('DELETE /domains/{id} removes the domain, and sending from it is refused again', async () => {
    const t = await newTenant();
    const d = await verifiedDomain(t);
    const template = { name: 'n', subject: 's', body: 'b', from: `hi@${d.domain}` };
    expect((await call('POST', '/templates', template, { key: t.secretKey })).status).toBe(201);
    expect((await call('DELETE', `/domains/${d.id}`, undefined, { key: t.secretKey })).status).toBe(204);
    expect((await call('GET', `/domains/project/${t.projectId}`, undefined, { key: t.secretKey })).body).toEqual([]);
    const refused = await call('POST', '/templates', template, { key: t.secretKey });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', statusCode: 403 });
  });
});
