import { parseTrustProxy } from './trust-proxy.js';

describe('TRUST_PROXY', () => {
  test('a hop count or a list of addresses, CIDRs and range names', () => {
    expect(parseTrustProxy('1')).toBe(1);
    const list = ['loopback', '10.0.0.0/8', 'fd00::/8', '192.168.1.7'];
    expect(parseTrustProxy('loopback, 10.0.0.0/8 ,fd00::/8,192.168.1.7')).toEqual(list);
  });

  test('anything else is refused (the gateway config stops the process at start)', () => {
    for (const bad of ['true', 'everyone', '10.0.0.0/33', '10.0.0/8', 'loopback,', '1.2.3.4/8/8', '-1', '::1/129']) {
      expect(parseTrustProxy(bad)).toBeNull();
    }
  });
});
