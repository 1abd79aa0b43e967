/** What messaging needs from the contacts service (implemented over RPC in ../contacts-rpc.ts). */
export interface ContactView {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

export interface UpsertedContact {
  contact: ContactView;
  /** Values sent as {value, persistent: false}: for this send only. */
  oneOff: Record<string, unknown>;
}

export interface ContactDirectory {
  /**
   * The shared write path of /v1/send, one call for all recipients, written in order: custom-data
   * rules apply; new contacts start unsubscribed. A failing recipient's error is thrown, named
   * `to.<index>` (the contacts written before and after it stay written).
   */
  upsertMany(
    projectId: string,
    emails: string[],
    opts: { subscribed?: boolean; data?: Record<string, unknown> },
  ): Promise<UpsertedContact[]>;
  get(projectId: string, contactId: string): Promise<ContactView | null>;
  /**
   * The recipients (by contact id) that are subscribed right now. One call per 1000 recipients; a deleted
   * contact (or another project's) is not subscribed.
   */
  subscribedNow(projectId: string, recipients: { contactId: string }[]): Promise<Set<string>>;
  setSubscribed(projectId: string, contactId: string, subscribed: boolean): Promise<ContactView>;
  /** The project's contact with this address (compared case-insensitively), or null. */
  findByEmail(projectId: string, email: string): Promise<ContactView | null>;
}
