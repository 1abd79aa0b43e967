import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { fromConnectError } from './rpc-errors.js';

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
export function createRpcClient<S extends DescService>(service: S, baseUrl: string): Client<S> {
  const client = createClient(service, createGrpcTransport({ baseUrl })) as Record<string, (...a: unknown[]) => unknown>;
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(service.method)) {
    const call = client[name].bind(client);
    wrapped[name] =
      method.methodKind === 'unary'
        ? (...args: unknown[]) => (call(...args) as Promise<unknown>).catch((err) => Promise.reject(fromConnectError(err)))
        : (...args: unknown[]) => rethrowStream(call(...args) as AsyncIterable<unknown>);
  }
  return wrapped as Client<S>;
}
