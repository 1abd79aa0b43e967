import net from 'node:net';
import { Health } from '@svc/proto/grpc/health/v1/health_pb';
import { AppError } from './errors.js';
import { createLogger } from './logger.js';
import { createRpcClient } from './rpc-client.js';
import { startRpcServer } from './rpc-server.js';

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

async function failure(call: Promise<unknown>): Promise<AppError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

function expectRetryable503(err: AppError): void {
  expect(err).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', details: { retryAfter: expect.any(Number) } });
  expect(err.message).not.toMatch(/127\.0\.0\.1|ECONN|:\d{2,5}\b/); // no internal address reaches a client
}

describe('RPC transport failures become a retryable 503 without internal addresses', () => {
  it('a service that refuses connections (down, restarting)', async () => {
    const srv = net.createServer();
    const port = await listen(srv);
    await new Promise((resolve) => srv.close(resolve));
    expectRetryable503(await failure(createRpcClient(Health, `http://127.0.0.1:${port}`, {}).check({})));
  });

  it('a service whose process dies mid-call (connection reset)', async () => {
    // Takes the call's first bytes, then the connection dies under it (TCP reset), as when the process is killed.
    const server = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    const port = await listen(server);
    try {
      expectRetryable503(await failure(createRpcClient(Health, `http://127.0.0.1:${port}`, {}).check({})));
    } finally {
      server.close();
    }
  });

  it('a service that does not answer within RPC_TIMEOUT_MS', async () => {
    const hung = { report: () => false, check: () => new Promise<boolean>(() => undefined) };
    const logger = createLogger('silent');
    const server = await startRpcServer({
      name: 'hung',
      host: '127.0.0.1',
      port: 0,
      routes: () => undefined,
      logger,
      shutdownTimeoutMs: 100,
      health: hung,
    });
    try {
      const started = Date.now();
      const client = createRpcClient(Health, `http://127.0.0.1:${server.port}`, { rpcTimeoutMs: 300 });
      expectRetryable503(await failure(client.check({})));
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await server.close();
    }
  });
});
