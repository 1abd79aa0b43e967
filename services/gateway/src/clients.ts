import type { Client } from '@connectrpc/connect';
import type { Config } from '@svc/lib/config';
import { createRpcClient } from '@svc/lib/rpc-client';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';

export interface Clients {
  identity: Client<typeof IdentityService>;
  contacts: Client<typeof ContactsService>;
  messaging: Client<typeof MessagingService>;
}

export function createClients(config: Config): Clients {
  return {
    identity: createRpcClient(IdentityService, config.rpcUrls.identity, config),
    contacts: createRpcClient(ContactsService, config.rpcUrls.contacts, config),
    messaging: createRpcClient(MessagingService, config.rpcUrls.messaging, config),
  };
}
