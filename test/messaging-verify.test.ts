import { call, expectEnvelope, newTenant, type Tenant } from './support/client.js';
import { publishDns, uniqueDomain } from './support/messaging.js';

let t: Tenant;
beforeAll(async () => {
  t = await newTenant();
});

const verify = (body: unknown, key = t.secretKey) => call('POST', '/v1/verify', body, { key });

describe('POST /v1/verify', () => {
  test('a deliverable address on a domain with MX and a website is valid', async () => {
    const domain = uniqueDomain('corp');
    await publishDns(domain, 'MX', { exchange: `mx.${domain}`, priority: 10 });
    await publishDns(domain, 'A', '192.0.2.1');
    const res = await verify({ email: `jane.doe+news@${domain}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        email: `jane.doe+news@${domain}`,
        valid: true,
        isDisposable: false,
        isAlias: false,
        isTypo: false,
        isPlusAddressed: true,
        isPersonalEmail: false,
        domainExists: true,
        hasWebsite: true,
        hasMxRecords: true,
        reasons: [],
      },
    });
  });

  test('role accounts, missing MX and missing website are reported in reasons', async () => {
    const domain = uniqueDomain('nomx');
    await publishDns(domain, 'NS', `ns1.${domain}`);
    const res = await verify({ email: `info@${domain}` });
    expect(res.body.data).toMatchObject({
      valid: false,
      isAlias: true,
      domainExists: true,
      hasMxRecords: false,
      hasWebsite: false,
    });
    expect(res.body.data.reasons).toEqual(['role_account', 'no_mx_records', 'no_website']);
  });

  test('typos, disposable providers and unknown domains are answers, not errors', async () => {
    const typo = await verify({ email: 'someone@gmial.com' });
    expect(typo.body.data).toMatchObject({ isTypo: true, suggestion: 'someone@gmail.com', valid: false });
    expect(typo.body.data.reasons).toContain('possible_typo');
    const disposable = await verify({ email: 'someone@mailinator.com' });
    expect(disposable.body.data).toMatchObject({ isDisposable: true, valid: false });
    const unknown = await verify({ email: `x@${uniqueDomain('ghost')}` });
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toMatchObject({ domainExists: false, hasMxRecords: false, valid: false });
    expect(unknown.body.data.reasons).toEqual(expect.arrayContaining(['domain_not_found', 'no_mx_records']));
  });

  test('a missing or malformed email is 422; a public key is 401', async () => {
    for (const body of [{}, { email: 42 }, { email: 'not-an-email' }, { email: 'a@b.com\r\nx' }]) {
      const res = await verify(body);
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors[0].field).toBe('email');
    }
    expectEnvelope(await verify({ email: 'a@example.com' }, t.publicKey), 401, 'INVALID_API_KEY');
  });
});
