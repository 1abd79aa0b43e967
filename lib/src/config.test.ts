import { ConfigError, parseConfig } from './config.js';

describe('config', () => {
  test('defaults apply when the environment is empty', () => {
    const c = parseConfig({});
    expect(c.port).toBe(8080);
    expect(c.rateLimitPerMinute).toBe(1000);
    expect(c.idempotencyTtlSeconds).toBe(86400);
    expect(c.publicUrl).toBe('http://localhost:8080');
    expect(c.rpcUrls.identity).toBe('http://127.0.0.1:50051');
    expect(c.signupDisabled).toBe(false);
  });

  test('a bad value names the variable in one line', () => {
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(/^invalid environment variable PORT: /);
    expect(() => parseConfig({ REDIS_URL: 'not a url' })).toThrow(/REDIS_URL/);
    expect(() => parseConfig({ SIGNUP_DISABLED: 'maybe' })).toThrow(/SIGNUP_DISABLED/);
  });

  test('empty strings count as unset', () => {
    expect(parseConfig({ DATABASE_URL: '' }).databaseUrl).toBeUndefined();
  });

  test('DNS_SERVERS is a comma-separated list', () => {
    expect(parseConfig({ DNS_SERVERS: '127.0.0.1:5353, 10.0.0.1' }).dnsServers).toEqual(['127.0.0.1:5353', '10.0.0.1']);
  });
});
