import { clientNetwork } from './client-network.js';

describe('the client unit of the login and sign-up limits', () => {
  test('an IPv4 address is itself, also when mapped into IPv6', () => {
    expect(clientNetwork('203.0.113.7')).toBe('203.0.113.7');
    expect(clientNetwork('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  test('every IPv6 address of one /64 is one client, however it is written', () => {
    const one = clientNetwork('2001:db8:0:1::1');
    expect(one).toBe('2001:db8:0:1::/64');
    expect(clientNetwork('2001:0db8:0000:0001:ffff:1:2:3')).toBe(one);
    expect(clientNetwork('2001:DB8:0:1:a::')).toBe(one);
    expect(clientNetwork('2001:db8:0:1::1%eth0')).toBe(one);
    expect(clientNetwork('2001:db8:0:2::1')).not.toBe(one);
  });

  test('short forms: loopback, a zero prefix, an embedded IPv4 tail', () => {
    expect(clientNetwork('::1')).toBe('0:0:0:0::/64');
    expect(clientNetwork('::')).toBe('0:0:0:0::/64');
    expect(clientNetwork('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
    expect(clientNetwork('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
  });

  test('no address (a closed socket) is one shared unit, not a crash', () => {
    expect(clientNetwork(undefined)).toBe('');
  });
});
