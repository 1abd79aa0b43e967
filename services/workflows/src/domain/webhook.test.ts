import { createHmac } from 'node:crypto';
import { assertPublicUrl, isPrivateAddress, signature } from './webhook.js';

describe('webhook safety and signature', () => {
  test('private, loopback, link-local and mapped addresses are private; public ones are not', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
    ]) {
      expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111'])
      expect([a, isPrivateAddress(a)]).toEqual([a, false]);
  });

  test('a host is checked by what it resolves to, not as written', async () => {
    await expect(assertPublicUrl('http://127.0.0.1:8080/x')).rejects.toThrow('private');
    await expect(assertPublicUrl('http://[::1]/x')).rejects.toThrow('private');
    await expect(assertPublicUrl('http://localhost/x')).rejects.toThrow('private');
    const resolve = (async () => [{ address: '10.0.0.5', family: 4 }]) as never;
    await expect(assertPublicUrl('https://hooks.example.com/x', resolve)).rejects.toThrow('10.0.0.5');
    const pub = (async () => [{ address: '93.184.216.34', family: 4 }]) as never;
    await expect(assertPublicUrl('https://hooks.example.com/x', pub)).resolves.toBeUndefined();
  });

  test('signature is v1= HMAC-SHA256 of "<timestamp>.<body>"', () => {
    const want = createHmac('sha256', 's3cret').update('1700000000.{"a":1}').digest('hex');
    expect(signature('s3cret', '1700000000', '{"a":1}')).toBe(`v1=${want}`);
  });
});
