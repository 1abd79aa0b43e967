import { parseEnv } from '@svc/lib/config';
import { gatewayEnv, sessionSecretProblem } from './config.js';

describe("the gateway's own environment variables", () => {
  test('defaults as documented', () => {
    const c = parseEnv(gatewayEnv, {});
    expect(c).toMatchObject({ rateLimitPerMinute: 1000, keyCacheTtlSeconds: 5, bodyLimit: '1mb' });
    expect(c.trackRateLimitPerMinute).toBe(1000);
    expect(c.sessionSecret).toBeUndefined();
    expect(c.webhookSecret).toBeUndefined();
    expect(c.trustProxy).toBeUndefined();
    expect(c.login).toEqual({ failuresPerClient: 20, failuresPerAccount: 50, windowMs: 900_000 });
    expect(c.signupsPerHour).toBe(10);
    expect(c.hstsMaxAge).toBe(31536000);
  });

  test('the per-family budgets default to RATE_LIMIT_PER_MINUTE', () => {
    const c = parseEnv(gatewayEnv, { RATE_LIMIT_PER_MINUTE: '60', RATE_LIMIT_SEND_PER_MINUTE: '10' });
    expect([c.rateLimitPerMinute, c.trackRateLimitPerMinute, c.sendRateLimitPerMinute]).toEqual([60, 60, 10]);
  });

  test('a bad value names the variable in one line', () => {
    expect(() => parseEnv(gatewayEnv, { TRUST_PROXY: 'yes please' })).toThrow(
      /^invalid environment variable TRUST_PROXY: /,
    );
    expect(() => parseEnv(gatewayEnv, { SESSION_SECRET: 'short' })).toThrow(
      /^invalid environment variable SESSION_SECRET: /,
    );
    expect(() => parseEnv(gatewayEnv, { BODY_LIMIT: 'lots' })).toThrow(/^invalid environment variable BODY_LIMIT: /);
    expect(parseEnv(gatewayEnv, { TRUST_PROXY: 'loopback' }).trustProxy).toBe('loopback');
    expect(() => parseEnv(gatewayEnv, { HSTS_MAX_AGE: '-1' })).toThrow(/^invalid environment variable HSTS_MAX_AGE: /);
    expect(parseEnv(gatewayEnv, { HSTS_MAX_AGE: '0' }).hstsMaxAge).toBe(0);
  });

  test('SESSION_SECRET is required in distributed mode only', () => {
    expect(sessionSecretProblem(undefined, false)).toMatch(/^SESSION_SECRET is required when DATABASE_URL is set/);
    expect(sessionSecretProblem('s'.repeat(16), false)).toBeUndefined();
    expect(sessionSecretProblem(undefined, true)).toBeUndefined();
  });

  test("messaging's variables are not the gateway's business", () => {
    expect(() => parseEnv(gatewayEnv, { SMTP_POOL_SIZE: 'many' })).not.toThrow();
  });
});
