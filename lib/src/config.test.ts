import { z } from 'zod';
import { ConfigError, envPositiveInt, parseConfig, parseEnv } from './config.js';

const SERVICES = [
  { name: 'identity', defaultPort: 50051 },
  { name: 'contacts', defaultPort: 50052 },
  { name: 'gateway', defaultPort: 8080, edge: true },
];

describe('platform config', () => {
  test('defaults apply when the environment is empty', () => {
    const c = parseConfig({}, SERVICES);
    expect(c.port).toBe(8080);
    expect(c.idempotencyTtlSeconds).toBe(86400);
    expect(c.publicUrl).toBe('http://localhost:8080');
    expect(c.signupDisabled).toBe(false);
  });

  test('each registered RPC service gets <NAME>_PORT and <NAME>_URL; the edge has neither', () => {
    const c = parseConfig({ CONTACTS_PORT: '6000', IDENTITY_URL: 'http://identity:50051' }, SERVICES);
    expect(c.rpcPorts).toEqual({ identity: 50051, contacts: 6000 });
    expect(c.rpcUrls).toEqual({ identity: 'http://identity:50051', contacts: 'http://127.0.0.1:6000' });
    expect(() => parseConfig({ CONTACTS_PORT: 'x' }, SERVICES)).toThrow(
      /^invalid environment variable CONTACTS_PORT: /,
    );
  });

  test('a bad value names the variable in one line', () => {
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(/^invalid environment variable PORT: /);
    expect(() => parseConfig({ REDIS_URL: 'not a url' })).toThrow(/REDIS_URL/);
    expect(() => parseConfig({ SIGNUP_DISABLED: 'maybe' })).toThrow(/SIGNUP_DISABLED/);
  });

  test('shutdown drain and migrations at start: defaults, values, refusals', () => {
    expect(parseConfig({})).toMatchObject({ shutdownDrainMs: 0, migrateOnStart: true });
    expect(parseConfig({ SHUTDOWN_DRAIN_MS: '5000', MIGRATE_ON_START: 'false' })).toMatchObject({
      shutdownDrainMs: 5000,
      migrateOnStart: false,
    });
    expect(() => parseConfig({ SHUTDOWN_DRAIN_MS: '-1' })).toThrow(/SHUTDOWN_DRAIN_MS/);
    expect(() => parseConfig({ MIGRATE_ON_START: 'later' })).toThrow(/MIGRATE_ON_START/);
  });

  test('empty strings count as unset', () => {
    expect(parseConfig({ DATABASE_URL: '' }).databaseUrl).toBeUndefined();
  });

  test('a service fragment is validated alone, with the same one-line rule', () => {
    const fragment = z.object({ SOME_LIMIT: envPositiveInt.default(3) });
    expect(parseEnv(fragment, {}).SOME_LIMIT).toBe(3);
    // Another service's variables, even invalid, are not this fragment's business.
    expect(parseEnv(fragment, { PORT: 'eighty', SOME_LIMIT: '' }).SOME_LIMIT).toBe(3);
    expect(() => parseEnv(fragment, { SOME_LIMIT: '-1' })).toThrow(/^invalid environment variable SOME_LIMIT: [^\n]+$/);
  });
});
