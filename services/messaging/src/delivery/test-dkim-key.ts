import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';

/**
 * For tests: an RSA-2048 DKIM key of `<selector>._domainkey.<domain>` and a verifier (mailauth) whose resolver
 * answers only that record.
 */
export function testDkimKey(domain: string, selector: string) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  });
  const record = `v=DKIM1; k=rsa; p=${publicKey.toString('base64')}`;
  return {
    privateKey,
    async verify(raw: Buffer) {
      const { results } = await dkimVerify(raw, {
        resolver: async (name: string) => {
          if (name !== `${selector}._domainkey.${domain}`)
            throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
          return [[record]] as never;
        },
      });
      return results;
    },
  };
}
