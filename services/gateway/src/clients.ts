import type { DescService } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import type { Config } from '@svc/lib/config';
import { connectTo, type ServiceDefinition } from '@svc/lib/services';
import { type REGISTRY, SERVICES } from '../../registry.js';

type Registry = typeof REGISTRY;
type Callable = { [K in keyof Registry]: Registry[K] extends { client: DescService } ? K : never }[keyof Registry];

/** A client of every registered service that serves RPCs (built with the registry's client factory). */
export type Clients = { [K in Callable]: Client<Registry[K]['client']> };

/** The registered services the gateway can call: each gets a client and a `GET /readyz` check. */
export const CALLABLE_SERVICES = SERVICES.filter((s): s is ServiceDefinition & { client: DescService } => !!s.client);

export function createClients(config: Config): Clients {
  // Typed by construction: one client per registry entry with a `client`, under its name.
  return Object.fromEntries(CALLABLE_SERVICES.map((s) => [s.name, connectTo(s, config)])) as unknown as Clients;
}
