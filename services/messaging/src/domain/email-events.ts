import type { EmailRow } from '../store/emails-store.js';

/** The email lifecycle on the bus (`emails.<type>`); contacts records them as `email.<type>` events. */
export type LifecycleType = 'sent' | 'delivery' | 'open' | 'click' | 'bounce' | 'complaint';

export interface LifecyclePayload {
  projectId: string;
  contactId: string;
  emailId: string;
  type: LifecycleType;
  occurredAt: string;
  data: Record<string, unknown>;
}

export function lifecycleMessage(
  email: Pick<EmailRow, 'id' | 'project_id' | 'contact_id' | 'to_email' | 'subject' | 'template_id'>,
  type: LifecycleType,
  data: Record<string, unknown> = {},
  occurredAt = new Date(),
): { subject: string; payload: LifecyclePayload } {
  return {
    subject: `emails.${type}`,
    payload: {
      projectId: email.project_id,
      contactId: email.contact_id,
      emailId: email.id,
      type,
      occurredAt: occurredAt.toISOString(),
      data: { email: email.to_email, subject: email.subject, ...(email.template_id ? { templateId: email.template_id } : {}), ...data },
    },
  };
}
