import type { ConnectRouter } from '@connectrpc/connect';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { fromJson, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { Health } from '@svc/proto/grpc/health/v1/health_pb';
import { AppError, validationError } from './errors.js';
import { createLogger } from './logger.js';
import { registry } from './metrics.js';
import { contextFrom, currentContext, runInContext, type RequestContext } from './request-context.js';
import { createRpcClient } from './rpc-client.js';
import { fromConnectError } from './rpc-errors.js';
import { startRpcServer, type RpcServer } from './rpc-server.js';
import { bearerInterceptor } from './service-auth.js';

// A real RPC server (the embedded mode's, `inProcess`) with a few ContactsService handlers made for the test.
const token = 'rpc-local-test-token-0123456789abcdef';
let seen: RequestContext | undefined;
let seenContentType: string | null = null;
let handlerSignal: AbortSignal | undefined;
let lookedUp: string[] = [];
let streamEnded = false;
let received: unknown;
/** JSON with a `__proto__` key: JSON.parse makes it an own property, as it does for a request body. */
const PROTO_KEY_DATA = '{"__proto__": {"x": 1}, "k": 1}';
const kept = { found: [{ id: 'c1', email: 'kept@example.com' }], missing: [] as string[] };

function routes(router: ConnectRouter): void {
  router.service(ContactsService, {
    async count(req, ctx) {
      seen = currentContext();
      seenContentType = ctx.requestHeader.get('content-type');
      if (req.projectId === 'invalid') {
        throw validationError([{ field: 'condition', message: 'unknown field', code: 'invalid', received: 'x' }]);
      }
      if (req.projectId === 'crash') throw new Error('boom at 10.0.0.7');
      return { count: 42n };
    },
    async lookupContacts(req, ctx) {
      handlerSignal = ctx.signal;
      if (req.projectId === 'hang') await new Promise((r) => ctx.signal.addEventListener('abort', r));
      lookedUp = req.emails;
      req.emails.push('changed-by-callee@example.com');
      return kept;
    },
    async updateContact(req) {
      received = toJson(ValueSchema, req.data!);
      return { contact: { id: req.id, data: JSON.parse(PROTO_KEY_DATA) } };
    },
    async *stream(req) {
      streamEnded = false;
      try {
        for (let i = 0; i < 5; i++) yield { contactIds: [`${req.projectId}-${i}`] };
      } finally {
        streamEnded = true;
      }
    },
  });
}

let server: RpcServer;
let url: string;
beforeAll(async () => {
  server = await startRpcServer({
    name: 'local',
    host: '127.0.0.1',
    port: 0,
    routes,
    logger: createLogger('silent'),
    shutdownTimeoutMs: 200,
    serviceToken: token,
    inProcess: true,
  });
  url = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.close());

const local = (opts: { serviceToken?: string; rpcTimeoutMs?: number } = { serviceToken: token }) =>
  createRpcClient(ContactsService, url, opts);
/** The same server through HTTP/2, as a client in another process reaches it. */
const network = () =>
  createClient(ContactsService, createGrpcTransport({ baseUrl: url, interceptors: [bearerInterceptor(token)] }));

const failure = (call: Promise<unknown>) =>
  call.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );

async function calls(method: string, code: string): Promise<number> {
  const metric = await registry.getSingleMetric('rpc_server_calls_total')!.get();
  const labels = { service: 'svc.contacts.v1.ContactsService', method, code };
  return metric.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}

test('a client of a server in this process calls it without HTTP/2; other clients still reach the port', async () => {
  await local().count({ projectId: 'p' });
  expect(seenContentType).toBeNull();
  await network().count({ projectId: 'p' });
  expect(seenContentType).toMatch(/^application\/grpc/);
});

test('a handler failure arrives as the same AppError as through the network', async () => {
  for (const projectId of ['invalid', 'crash']) {
    const inProcess = (await failure(local().count({ projectId }))) as AppError;
    const wire = fromConnectError(await failure(network().count({ projectId })));
    expect(inProcess).toBeInstanceOf(AppError);
    expect({ ...inProcess, message: inProcess.message }).toEqual({ ...wire, message: wire.message });
  }
  const invalid = (await failure(local().count({ projectId: 'invalid' }))) as AppError;
  expect(invalid).toMatchObject({ status: 422, errors: [{ field: 'condition', received: 'x' }] });
  expect(((await failure(local().count({ projectId: 'crash' }))) as AppError).message).not.toMatch(/10\.0\.0\.7/);
});

test('the service token is checked as through the network: a caller without it gets 401', async () => {
  const err = (await failure(local({}).count({ projectId: 'p' }))) as AppError;
  expect(err.status).toBe(401);
  expect(
    fromConnectError(await failure(createClient(ContactsService, createGrpcTransport({ baseUrl: url })).count({}))),
  ).toMatchObject({ status: err.status, code: err.code });
  expect((await local().count({ projectId: 'p' })).count).toBe(42n);
});

test("the handler runs in the caller's request context: same request id and trace id, a new span id", async () => {
  const ctx = contextFrom({ requestId: 'req-rpc-local-1', traceparent: undefined });
  await runInContext(ctx, () => local().count({ projectId: 'p' }));
  expect(seen).toMatchObject({ requestId: 'req-rpc-local-1', traceId: ctx.traceId });
  expect(seen!.parentId).not.toBe(ctx.parentId);
  await local().count({ projectId: 'p' });
  expect(seen?.requestId).toMatch(/^req_[0-9a-f]{32}$/);
});

test('the deadline ends the call with a retryable 503 and aborts the handler', async () => {
  const started = performance.now();
  const hanging = local({ serviceToken: token, rpcTimeoutMs: 150 }).lookupContacts({ projectId: 'hang' });
  const err = (await failure(hanging)) as AppError;
  expect(err).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  expect(performance.now() - started).toBeLessThan(2000);
  expect(handlerSignal?.aborted).toBe(true);
});

test('caller and callee share no message: each side changes its own copy only', async () => {
  const emails = ['a@example.com'];
  const res = await local().lookupContacts({ projectId: 'p', emails });
  expect(emails).toEqual(['a@example.com']);
  expect(lookedUp).toEqual(['a@example.com', 'changed-by-callee@example.com']);
  res.found[0].email = 'changed-by-caller@example.com';
  expect(kept.found[0].email).toBe('kept@example.com');
});

test('a __proto__ key of JSON data stays an own key both ways, as through the network; no prototype set', async () => {
  for (const client of [local(), network()]) {
    received = undefined;
    const data = fromJson(ValueSchema, JSON.parse(PROTO_KEY_DATA));
    const { contact } = await client.updateContact({ projectId: 'p', id: 'c1', data });
    expect(JSON.stringify(received)).toBe('{"__proto__":{"x":1},"k":1}');
    expect(Object.keys(contact!.data!)).toEqual(['__proto__', 'k']);
    expect(Object.getPrototypeOf(contact!.data)).toBe(Object.prototype);
    expect((contact!.data as Record<string, unknown>).x).toBeUndefined();
  }
});

test('metrics count in-process calls with their outcome, as the network path does', async () => {
  const ok = await calls('Count', 'ok');
  const invalid = await calls('Count', 'invalid_argument');
  await local().count({ projectId: 'p' });
  await failure(local().count({ projectId: 'invalid' }));
  expect(await calls('Count', 'ok')).toBe(ok + 1);
  expect(await calls('Count', 'invalid_argument')).toBe(invalid + 1);
});

test('a server stream is read on demand; a caller that stops reading ends the handler', async () => {
  const ids: string[] = [];
  for await (const batch of local().stream({ projectId: 's' })) ids.push(...batch.contactIds);
  expect(ids).toEqual(['s-0', 's-1', 's-2', 's-3', 's-4']);
  expect(streamEnded).toBe(true);
  for await (const batch of local({ serviceToken: token, rpcTimeoutMs: 100 }).stream({ projectId: 't' })) {
    expect(batch.contactIds).toEqual(['t-0']);
    break;
  }
  await new Promise((r) => setTimeout(r, 300));
  expect(streamEnded).toBe(true);
});

test('a closed server is no longer reached in-process: callers get the refused connection as a 503', async () => {
  const other = await startRpcServer({
    name: 'closing',
    host: '127.0.0.1',
    port: 0,
    routes,
    logger: createLogger('silent'),
    shutdownTimeoutMs: 100,
    inProcess: true,
  });
  const client = createRpcClient(Health, `http://127.0.0.1:${other.port}`, { rpcTimeoutMs: 2000 });
  expect((await client.check({})).status).toBe(1);
  await other.close();
  expect(await failure(client.check({}))).toMatchObject({ status: 503 });
});
