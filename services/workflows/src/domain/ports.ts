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
  byEmail(projectId: string, email: string): Promise<ContactView | null>;
  update(projectId: string, id: string, patch: { data?: Record<string, unknown>; subscribed?: boolean }): Promise<void>;
}

export interface QueuedMail {
  /** queued, suppressed, duplicate or failed */
  status: string;
  emailId: string;
  error?: string;
}

/** What the workflows service needs of the messaging service: one email into its queue. */
export interface MailPort {
  queue(
    projectId: string,
    workflowId: string,
    content: SendEmailConfig,
    to: { contact: ContactView; variables: Record<string, unknown>; dedupeKey: string },
  ): Promise<QueuedMail>;
}

export interface ContactsFields {
  fields(projectId: string): Promise<{ field: string; type: string }[]>;
}
