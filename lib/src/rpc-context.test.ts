import { Health } from '@svc/proto/grpc/health/v1/health_pb';
import { createLogger } from './logger.js';
import { contextFrom, currentContext, runInContext, type RequestContext } from './request-context.js';
import { createRpcClient } from './rpc-client.js';
import { startRpcServer, type RpcServer } from './rpc-server.js';

// The health check is a handler like any other: it records the context the server runs it in.
let seen: RequestContext | undefined;
let server: RpcServer;
const token = 'rpc-context-test-token-0123456789abcdef';

beforeAll(async () => {
  const health = {
    report: () => false,
    check: async () => {
      seen = currentContext();
      return true;
    },
  };
  server = await startRpcServer({
    name: 'ctx',
    host: '127.0.0.1',
    port: 0,
    routes: () => undefined,
    logger: createLogger('silent'),
    shutdownTimeoutMs: 100,
    serviceToken: token,
    health,
  });
});

afterAll(() => server.close());

const client = () => createRpcClient(Health, `http://127.0.0.1:${server.port}`, { serviceToken: token });

test('the handler runs in the caller context: same request id and trace id, a new span id', async () => {
  const ctx = contextFrom({ requestId: 'req-rpc-context-1', traceparent: undefined });
  await runInContext(ctx, () => client().check({}));
  expect(seen).toMatchObject({ requestId: 'req-rpc-context-1', traceId: ctx.traceId, flags: '01' });
  expect(seen!.parentId).not.toBe(ctx.parentId);
});

test('a call made outside any request gets a context minted by the server', async () => {
  await client().check({});
  expect(seen?.requestId).toMatch(/^req_[0-9a-f]{32}$/);
  expect(seen?.requestId).not.toBe('req-rpc-context-1');
});
