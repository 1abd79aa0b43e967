import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { contextClientInterceptor } from './rpc-context.js';
import { fromConnectError } from './rpc-errors.js';
import { withLocalServers } from './rpc-local.js';
import { bearerInterceptor } from './service-auth.js';
import { tracingClientInterceptor, tracingOn } from './tracing.js';

/** What a caller needs from the config (pass the Config itself): required, so no caller forgets the token. */
export interface RpcClientOptions {
  /** Sent as `authorization: Bearer <token>` on every call (SERVICE_TOKEN). */
  serviceToken?: string;
  /** Deadline of every call (RPC_TIMEOUT_MS): a callee that hangs costs the caller a bounded 503, not forever. */
  rpcTimeoutMs?: number;
}

async function* rethrowStream<T>(stream: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* stream;
  } catch (err) {
    throw fromConnectError(err);
  }
}

/**
 * A gRPC client whose failures arrive as the AppError the callee raised. (Connect wraps
 * whatever a client interceptor throws back into a ConnectError, so the wrapping is here.)
 */
export function createRpcClient<S extends DescService>(service: S, baseUrl: string, opts: RpcClientOptions): Client<S> {
  // Every call carries the current request id and trace context (see rpc-context.ts).
  const interceptors = [
    contextClientInterceptor(),
    // Traces on: a client span, sent as the callee's parent (lib/tracing.ts).
    ...(tracingOn() ? [tracingClientInterceptor()] : []),
    ...(opts.serviceToken ? [bearerInterceptor(opts.serviceToken)] : []),
  ];
  // No gzip between services (acceptCompression: none): on loopback or a cluster network compressing an answer
  // of a kilobyte or more (a TrackEvents batch) cost both sides more CPU than the bytes it saved.
  const network = createGrpcTransport({
    baseUrl,
    interceptors,
    defaultTimeoutMs: opts.rpcTimeoutMs,
    acceptCompression: [],
  });
  // Embedded mode: a callee in this process is called directly, with the same interceptors and deadline.
  const transport = withLocalServers(network, { baseUrl, interceptors, defaultTimeoutMs: opts.rpcTimeoutMs });
  const client = createClient(service, transport) as Record<string, (...a: unknown[]) => unknown>;
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(service.method)) {
    const call = client[name].bind(client);
    wrapped[name] =
      method.methodKind === 'unary'
        ? (...args: unknown[]) =>
            (call(...args) as Promise<unknown>).catch((err) => Promise.reject(fromConnectError(err)))
        : (...args: unknown[]) => rethrowStream(call(...args) as AsyncIterable<unknown>);
  }
  return wrapped as Client<S>;
}
