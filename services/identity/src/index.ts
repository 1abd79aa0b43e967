import { openServiceDatabase, type RunningService, type Runtime } from '@svc/lib/runtime';
import { startRpcServer } from '@svc/lib/rpc-server';
import { Identity } from './domain/identity.js';
import { identityRoutes } from './rpc.js';
import { migrations } from './store/migrations.js';
import { IdentityStore } from './store/identity-store.js';

export async function startIdentity(rt: Runtime): Promise<RunningService> {
  const db = await openServiceDatabase('identity', rt, migrations);
  const identity = new Identity(new IdentityStore(db.pool), { signupDisabled: rt.config.signupDisabled });
  const server = await startRpcServer({
    name: 'identity',
    host: rt.config.bindHost,
    port: rt.config.rpcPorts.identity,
    routes: identityRoutes(identity),
    logger: rt.logger,
    shutdownTimeoutMs: rt.config.shutdownTimeoutMs,
  });
  return {
    name: 'identity',
    async stop() {
      await server.close();
      await db.close();
    },
  };
}
