import type { DescMessage, DescService } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import type { z } from 'zod';
import type { Topic } from './bus-topic.js';
import type { Config, ServicePort } from './config.js';
import type { Migration } from './migrate.js';
import { createRpcClient } from './rpc-client.js';
import type { RunningService, Runtime } from './runtime.js';

/**
 * The shape of the service registry (the list itself is `services/registry.ts`, outside lib:
 * lib never imports a service). Each service is declared once: name, default port, the subjects
 * it owns, its RPC client and, loaded only when it runs, its own config fragment and starter.
 */

export type StartedService = RunningService & { url?: string };

/** What a service's package entry exports as `service`: its own environment variables and its starter. */
export interface ServiceModule<C extends object = object> {
  /** zod schema of the variables only this service reads (validated at start, one-line errors). */
  config?: z.ZodType<C, z.ZodTypeDef, unknown>;
  /** The migrations of the service's own database (what `openServiceDatabase` gets), for `platform --migrate`. */
  migrations?: Migration[];
  /**
   * Why the service cannot run with its variables in this mode (a secret distributed mode needs), or undefined:
   * bin/platform.ts refuses to start with `config error: <problem>` before any service starts.
   */
  configProblem?(own: C, embedded: boolean): string | undefined;
  start(rt: Runtime<C>): Promise<StartedService>;
}

/** Keeps the fragment's output type tied to the starter's `rt.config`. */
export const serviceModule = <C extends object>(m: ServiceModule<C>): ServiceModule<C> => m;

export interface ServiceDefinition<S extends DescService = DescService> extends ServicePort {
  /** The generated Connect service: callers build their client from it (see `connectTo`). */
  client?: S;
  /** The bus subjects this service publishes (proto/topics/<name>.ts). */
  topics?: Record<string, Topic<DescMessage>>;
  /** Absent while the service has no code (an empty package): it cannot be started. */
  // Each service's fragment has its own output type.
  load?: () => Promise<ServiceModule<any>>;
}

/** Fills in each entry's name from its key, keeping the entries' own types (a typed `client`). */
export function defineRegistry<T extends Record<string, Omit<ServiceDefinition, 'name'>>>(
  entries: T,
): { [K in keyof T]: T[K] & { name: K & string } } {
  return Object.fromEntries(Object.entries(entries).map(([name, e]) => [name, { ...e, name }])) as never;
}

/** A client of a registered service at its configured address, with the service token and deadline. */
export function connectTo<S extends DescService>(service: { name: string; client: S }, config: Config): Client<S> {
  const url = config.rpcUrls[service.name];
  if (!url) throw new Error(`service ${service.name} has no configured address (is it registered?)`);
  return createRpcClient(service.client, url, config);
}
