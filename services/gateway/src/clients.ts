import type { Client } from '@connectrpc/connect';
import type { Config } from '@svc/lib/config';
import { createRpcClient } from '@svc/lib/rpc-client';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';

export interface Clients {
  identity: Client<typeof IdentityService>;
  contacts: Client<typeof ContactsService>;
}

export function createClients(config: Config): Clients {
  return {
    identity: createRpcClient(IdentityService, config.rpcUrls.identity),
    contacts: createRpcClient(ContactsService, config.rpcUrls.contacts),
  };
}
