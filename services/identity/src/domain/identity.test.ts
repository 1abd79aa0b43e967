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

/** Milliseconds of a refused login (it must be refused as INVALID_CREDENTIALS). */
async function refusedLoginMs(identity: Identity, email: string): Promise<number> {
  const started = performance.now();
  const err = await identity.login({ email, password: 'a-wrong-password' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('INVALID_CREDENTIALS');
  return performance.now() - started;
}

describe('login', () => {
  test('an unknown address or an account without a password is refused as slowly as a wrong password', async () => {
    const identity = await identityWith();
    const total = { known: 0, unknown: 0, oauth: 0 };
    for (let i = 0; i < 3; i++) {
      total.known += await refusedLoginMs(identity, 'known@example.com');
      total.unknown += await refusedLoginMs(identity, 'nobody@example.com');
      total.oauth += await refusedLoginMs(identity, 'oauth@example.com');
    }
    // The same key derivation runs in each case; without it an unknown address answered in well under 1 % of it.
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
