import { AppError, unverifiedDomain } from '@svc/lib/errors';
import type { DomainRow } from '../store/domains-store.js';
import { dnsRecords, evaluateRecords, normalizeDomain } from './sender-domains.js';

const row = {
  id: 'd1',
  project_id: 'p1',
  domain: 'example.com',
  status: 'pending',
  verification_token: 'tok',
  dkim_selector: 'svc1',
  dkim_private_key: 'k',
  dkim_public_key: 'PUBKEY',
  record_status: {},
  created_at: new Date(),
  verified_at: null,
  last_checked_at: null,
} as DomainRow;

describe('sender domains', () => {
  test('domain names are normalised; anything else is a 422 on domain', () => {
    expect(normalizeDomain(' Mail.Example.COM. ')).toBe('mail.example.com');
    for (const bad of ['', 'localhost', 'a b.com', 'http://x.com', '-a.com', 'x.c', 7]) {
      expect(() => normalizeDomain(bad)).toThrow(expect.objectContaining({ status: 422 }));
    }
  });

  test('records to publish: verification TXT, DKIM TXT under the selector, SPF guidance', () => {
    expect(dnsRecords(row, '_spf.p.example')).toEqual([
      {
        type: 'TXT',
        name: '_svc-verification.example.com',
        value: 'svc-verification=tok',
        purpose: 'verification',
        verified: false,
      },
      {
        type: 'TXT',
        name: 'svc1._domainkey.example.com',
        value: 'v=DKIM1; k=rsa; p=PUBKEY',
        purpose: 'dkim',
        verified: false,
      },
      {
        type: 'TXT',
        name: 'example.com',
        value: 'v=spf1 include:_spf.p.example ~all',
        purpose: 'spf',
        verified: false,
      },
    ]);
  });

  test('verified needs the verification token and the DKIM key; SPF is reported only', () => {
    const none = evaluateRecords(row, { verification: [], dkim: [], spf: [] }, '_spf.x');
    expect(none).toEqual({ verification: false, dkim: false, spf: false, verified: false });
    const all = evaluateRecords(
      row,
      {
        verification: ['other', 'svc-verification=tok'],
        dkim: ['v=DKIM1; k=rsa; p=PUB KEY'],
        spf: ['v=spf1 include:_spf.x ~all'],
      },
      '_spf.x',
    );
    expect(all).toEqual({ verification: true, dkim: true, spf: true, verified: true });
    expect(
      evaluateRecords(row, { verification: ['svc-verification=tok'], dkim: ['v=DKIM1; p=OTHER'], spf: [] }, '_spf.x')
        .verified,
    ).toBe(false);
    // The key with something after it (a stray quote, a second key pasted on) is no key receivers can use.
    for (const dkim of ['v=DKIM1; k=rsa; p=PUBKEY"', 'v=DKIM1; p=PUBKEYPUBKEY', 'v=DKIM1; p=xPUBKEY; t=s'])
      expect(evaluateRecords(row, { verification: [], dkim: [dkim], spf: [] }, '_spf.x').dkim).toBe(false);
    expect(evaluateRecords(row, { verification: [], dkim: ['v=DKIM1; p=PUBKEY; t=s;'], spf: [] }, '_spf.x').dkim).toBe(
      true,
    );
  });

  test("the unverified-domain error is SPEC.md's 403 with code INTERNAL_SERVER_ERROR", () => {
    const e = unverifiedDomain('x.com');
    expect(e).toBeInstanceOf(AppError);
    expect(e).toMatchObject({ status: 403, code: 'INTERNAL_SERVER_ERROR' });
    expect(e.message).toMatch(/not verified/);
    // An address names its domain; the sandbox hint ends the suggestion.
    expect(unverifiedDomain('Team@X.com', ' Or the sandbox.')).toMatchObject({
      details: { reason: 'domain_not_verified', domain: 'x.com' },
      suggestion: expect.stringMatching(/minutes\)\. Or the sandbox\.$/),
    });
  });
});
