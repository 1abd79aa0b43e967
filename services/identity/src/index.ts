import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { Identity } from './domain/identity.js';
import { Invitations } from './domain/invitations.js';
import { identityRoutes } from './rpc.js';
import { migrations } from './store/migrations.js';
import { IdentityStore } from './store/identity-store.js';
import { InvitationsStore } from './store/invitations-store.js';

export async function startIdentity(rt: Runtime): Promise<RunningService> {
  const db = await openServiceDatabase('identity', rt, migrations);
  const store = new IdentityStore(db.pool);
  const identity = new Identity(store, { signupDisabled: rt.config.signupDisabled });
  const invitations = new Invitations(identity, store, new InvitationsStore(db.pool));
  const server = await serveRpc(rt, 'identity', identityRoutes(identity, invitations), db);
  return {
    name: 'identity',
    async stop() {
      await server.close();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts); identity reads only platform-wide variables. */
export const service = serviceModule({ start: startIdentity });
