import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { Identity } from './domain/identity.js';
import { identityRoutes } from './rpc.js';
import { migrations } from './store/migrations.js';
import { IdentityStore } from './store/identity-store.js';

export async function startIdentity(rt: Runtime): Promise<RunningService> {
  const db = await openServiceDatabase('identity', rt, migrations);
  const identity = new Identity(new IdentityStore(db.pool), { signupDisabled: rt.config.signupDisabled });
  const server = await serveRpc(rt, 'identity', identityRoutes(identity));
  return {
    name: 'identity',
    async stop() {
      await server.close();
      await db.close();
    },
  };
}
