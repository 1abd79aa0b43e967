/** What messaging needs from the contacts service (implemented over RPC in ../contacts-rpc.ts). */
export interface ContactView {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

export interface ContactDirectory {
  /** The shared write path of /v1/send: custom-data rules apply; new contacts start unsubscribed. */
  upsert(projectId: string, email: string, opts: { subscribed?: boolean; data?: Record<string, unknown> }): Promise<{ contact: ContactView; oneOff: Record<string, unknown> }>;
  get(projectId: string, contactId: string): Promise<ContactView | null>;
  setSubscribed(projectId: string, contactId: string, subscribed: boolean): Promise<ContactView>;
}
