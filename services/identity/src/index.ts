import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { type IdentityEnv, identityEnv } from './config.js';
import { AccountLifecycle } from './domain/account-lifecycle.js';
import { Billing } from './domain/billing.js';
import { Identity } from './domain/identity.js';
import { createSystemMailer } from './domain/system-mail.js';
import { Invitations } from './domain/invitations.js';
import { ProjectWipes } from './domain/project-wipes.js';
import { Suspensions } from './domain/suspensions.js';
import { OAuth } from './domain/oauth.js';
import { identityRoutes } from './rpc.js';
import { AccountTokensStore } from './store/account-tokens-store.js';
import { BillingStore } from './store/billing-store.js';
import { migrations } from './store/migrations.js';
import { IdentityStore } from './store/identity-store.js';
import { InvitationsStore } from './store/invitations-store.js';
import { SuspensionsStore } from './store/suspensions-store.js';
import { WipesStore } from './store/wipes-store.js';

export async function startIdentity(rt: Runtime<IdentityEnv>): Promise<RunningService> {
  const db = await openServiceDatabase('identity', rt, migrations);
  const store = new IdentityStore(db.pool);
  const identity = new Identity(store, { signupDisabled: rt.config.signupDisabled });
  const invitations = new Invitations(identity, store, new InvitationsStore(db.pool));
  const { config } = rt;
  const from = config.systemFrom ?? `no-reply@${new URL(config.publicUrl).hostname}`;
  const mailer = createSystemMailer(config.accountSmtpUrl, from);
  const lifecycle = new AccountLifecycle(store, new AccountTokensStore(db.pool), mailer, {
    publicUrl: config.publicUrl,
    verificationTtlSeconds: config.verificationTtlSeconds,
    resetTtlSeconds: config.resetTtlSeconds,
    logger: rt.logger.child({ service: 'identity' }),
  });
  const billing = new Billing(identity, new BillingStore(db.pool));
  const safety = {
    wipes: new ProjectWipes(identity, store, new WipesStore(db.pool)),
    suspensions: new Suspensions(identity, new SuspensionsStore(db.pool)),
  };
  const oauth = new OAuth(identity, config.oauthProviders, config.publicUrl);
  const routes = identityRoutes(identity, invitations, lifecycle, billing, safety, oauth);
  const server = await serveRpc(rt, 'identity', routes, db);
  return {
    name: 'identity',
    async stop() {
      await server.close();
      mailer.close();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts); identity's own variables are the account mail's. */
export const service = serviceModule({ migrations, config: identityEnv, start: startIdentity });
