import { AppError } from '@svc/lib/errors';
import type { IdentityStore, UserRow } from '../store/identity-store.js';
import { Identity } from './identity.js';
import { hashPassword } from './passwords.js';

const OLD_ADDRESS = `${'a'.repeat(70)}@example.com`;

/** The store's reads that login makes: one account with a password, one without (OAuth), nobody else. */
async function identityWith(): Promise<Identity> {
  const user = (email: string, password_hash: string): UserRow => ({
    id: '00000000-0000-4000-8000-000000000001',
    email,
    password_hash,
    email_verified: true,
    created_at: new Date(),
  });
  const users = new Map([
    ['known@example.com', user('known@example.com', await hashPassword('the-right-password'))],
    ['oauth@example.com', user('oauth@example.com', '')],
    // Opened before sign-up took lib/email-syntax's rule (at most 64 characters before the @).
    [OLD_ADDRESS, user(OLD_ADDRESS, await hashPassword('the-right-password'))],
  ]);
  const store = {
    userByEmail: async (key: string) => users.get(key) ?? null,
    insertSession: async () => undefined,
  } as unknown as IdentityStore;
  return new Identity(store, { signupDisabled: false });
}

/**
 * CPU microseconds of the process (the scrypt derivation runs on libuv's threads, which count) spent by a refused
 * login (it must be refused as INVALID_CREDENTIALS): the work done, not the time it took on a loaded machine.
 */
async function refusedLoginCpu(identity: Identity, email: string): Promise<number> {
  const before = process.cpuUsage();
  const err = await identity.login({ email, password: 'a-wrong-password' }).catch((e: unknown) => e);
  const used = process.cpuUsage(before);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('INVALID_CREDENTIALS');
  return used.user + used.system;
}

describe('login', () => {
  test('an unknown address or an account without a password costs a key derivation, as a wrong one', async () => {
    const identity = await identityWith();
    const total = { known: 0, unknown: 0, oauth: 0 };
    for (let i = 0; i < 3; i++) {
      total.known += await refusedLoginCpu(identity, 'known@example.com');
      total.unknown += await refusedLoginCpu(identity, 'nobody@example.com');
      total.oauth += await refusedLoginCpu(identity, 'oauth@example.com');
    }
    // The same key derivation runs in each case; without it an unknown address cost well under 1 % of its CPU.
    expect(total.unknown).toBeGreaterThan(total.known * 0.4);
    expect(total.oauth).toBeGreaterThan(total.known * 0.4);
  });

  test('an account whose address sign-up would refuse today still signs in', async () => {
    const identity = await identityWith();
    const out = await identity.login({ email: OLD_ADDRESS, password: 'the-right-password' });
    expect(out.user.email).toBe(OLD_ADDRESS);
    await expect(identity.signUp({ email: OLD_ADDRESS, password: 'the-right-password' })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
  });
});
