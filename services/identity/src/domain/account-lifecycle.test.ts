import type { Logger } from '@svc/lib/logger';
import type { AccountTokensStore } from '../store/account-tokens-store.js';
import type { IdentityStore, UserRow } from '../store/identity-store.js';
import { AccountLifecycle } from './account-lifecycle.js';
import type { SystemMail, SystemMailer } from './system-mail.js';

const alice: UserRow = {
  id: '00000000-0000-4000-8000-000000000001',
  email: 'alice@example.com',
  password_hash: '',
  email_verified: false,
  created_at: new Date(),
};

/** Stand-ins for the stores' calls a reset request makes, and a relay that answers as `relay` says. */
function lifecycle(relay: (mail: SystemMail) => Promise<void>) {
  const sent: SystemMail[] = [];
  const warnings: unknown[] = [];
  const lookups: string[] = [];
  const users = {
    userByEmail: async (key: string) => {
      lookups.push(key);
      return key === 'alice@example.com' ? alice : null;
    },
  };
  const tokens = { insertWithin: async () => true };
  const mailer: SystemMailer = {
    send: (mail) => {
      sent.push(mail);
      return relay(mail);
    },
    close: () => undefined,
  };
  const logger = { info: () => undefined, warn: (o: unknown) => warnings.push(o) } as unknown as Logger;
  const accounts = new AccountLifecycle(
    users as unknown as IdentityStore,
    tokens as unknown as AccountTokensStore,
    mailer,
    { publicUrl: 'http://localhost:8080', verificationTtlSeconds: 86400, resetTtlSeconds: 3600, logger },
  );
  return { accounts, sent, warnings, lookups };
}

describe('password reset requests', () => {
  test('a known address is answered without waiting for the relay, like an unknown one', async () => {
    let deliver = () => {};
    const { accounts, sent } = lifecycle(() => new Promise<void>((resolve) => (deliver = resolve)));
    // The relay has not answered: the request is answered all the same.
    const waited = new Promise((resolve) => setTimeout(() => resolve('still waiting for the relay'), 2000).unref());
    expect(await Promise.race([accounts.requestPasswordReset('Alice@example.com'), waited])).toBeUndefined();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ to: 'alice@example.com', subject: 'Reset your password' });
    expect(sent[0].text).toMatch(/http:\/\/localhost:8080\/app\/reset\?token=[A-Za-z0-9_-]{43}/);
    deliver();
    await accounts.requestPasswordReset('nobody@example.com');
    expect(sent).toHaveLength(1);
  });

  test('an address longer than any account can have is answered without a lookup', async () => {
    const { accounts, sent, lookups } = lifecycle(async () => undefined);
    await expect(accounts.requestPasswordReset(`${'a'.repeat(1_000_000)}@example.com`)).resolves.toBeUndefined();
    await expect(accounts.requestPasswordReset(`${'a'.repeat(242)}@example.com`)).resolves.toBeUndefined();
    expect(lookups).toEqual([`${'a'.repeat(242)}@example.com`]);
    expect(sent).toHaveLength(0);
  });

  test('a relay that fails is only logged', async () => {
    const { accounts, warnings } = lifecycle(async () => {
      throw new Error('relay down');
    });
    await expect(accounts.requestPasswordReset('alice@example.com')).resolves.toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toHaveLength(1);
  });
});
