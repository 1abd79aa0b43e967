import type { SendEmailConfig } from './workflow-input.js';

/** A contact as the workflow steps read it. */
export interface ContactView {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt?: Date;
  updatedAt?: Date;
}

/** What the workflows service needs of the contacts service. */
export interface ContactsPort {
  /** Null when the contact does not exist (anymore) in the project. */
  get(projectId: string, id: string): Promise<ContactView | null>;
  /** Many contacts of a project in one call; ids missing from the map do not exist (anymore). */
  getMany(projectId: string, ids: string[]): Promise<Map<string, ContactView>>;
  byEmail(projectId: string, email: string): Promise<ContactView | null>;
  update(projectId: string, id: string, patch: { data?: Record<string, unknown>; subscribed?: boolean }): Promise<void>;
}

export interface QueuedMail {
  /** queued, suppressed, duplicate or failed */
  status: string;
  emailId: string;
  error?: string;
}

export interface MailRecipient {
  contact: ContactView;
  variables: Record<string, unknown>;
  dedupeKey: string;
  /** The sending execution's chain depth: the email's lifecycle events start other workflows one deeper. */
  chainDepth: number;
}

/** What the workflows service needs of the messaging service: emails of one content into its queue. */
export interface MailPort {
  /** One result per recipient, in order (at most 1000 recipients). */
  queue(projectId: string, workflowId: string, content: SendEmailConfig, to: MailRecipient[]): Promise<QueuedMail[]>;
}

export interface ContactsFields {
  fields(projectId: string): Promise<{ field: string; type: string }[]>;
}

/** What the workflows API asks the messaging service when a SEND_EMAIL step is saved (as campaigns do). */
export interface MailChecksPort {
  /** Whether the template is one of the project's. */
  templateExists(projectId: string, id: string): Promise<boolean>;
  /** As `templateExists`, at once: 409 CONFLICT while a DELETE of the template is under way. */
  templateExistsUnlessDeleting(projectId: string, id: string): Promise<boolean>;
  /** Messaging's 422 (fields `subject`, `body`) when either does not parse as a template. */
  checkContent(projectId: string, subject: string, body: string): Promise<void>;
  /** Whether the sender's domain is verified for the project. */
  senderVerified(projectId: string, from: string): Promise<boolean>;
}

/** What the workflows API asks the segments service when a workflow comes to listen for a segment's events. */
export interface SegmentChecksPort {
  /** Whether the project has a segment of this slug, at once: 409 CONFLICT while a DELETE of it is under way. */
  segmentExistsUnlessDeleting(projectId: string, slug: string): Promise<boolean>;
}
