import { z } from 'zod';
import { withTransaction, type Pool } from '@svc/lib/db';
import { isUuid } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import { parseOrThrow } from '@svc/lib/zod-errors';
import type { EmailsStore } from '../store/emails-store.js';
import { lifecycleMessage } from './email-events.js';

// POST /webhooks/{provider}: delivery, bounce and complaint notifications from the mail
// infrastructure, in one documented JSON shape (README "Messaging").

const TYPE_ALIASES: Record<string, 'delivery' | 'bounce' | 'complaint'> = {
  delivery: 'delivery',
  delivered: 'delivery',
  bounce: 'bounce',
  bounced: 'bounce',
  complaint: 'complaint',
  complained: 'complaint',
  spam: 'complaint',
};

const notificationSchema = z
  .object({
    type: z.string().transform((s, ctx) => {
      const name = s.toLowerCase();
      // Own keys only: `constructor` would find Object's (and be taken for a complaint).
      const t = Object.hasOwn(TYPE_ALIASES, name) ? TYPE_ALIASES[name] : undefined;
      if (!t)
        ctx.addIssue({
          code: 'custom',
          message: 'type must be delivery, bounce or complaint',
          params: { code: 'invalid_enum_value' },
        });
      return t;
    }),
    emailId: z.string().optional(),
    messageId: z.string().max(500).optional(),
    reason: z.string().max(1000).optional(),
    bounceType: z.enum(['hard', 'soft']).default('hard'),
    occurredAt: z.string().datetime({ offset: true }).optional(),
  })
  .refine((n) => n.emailId || n.messageId, {
    message: 'emailId or messageId is required',
    path: ['emailId'],
    params: { code: 'required' },
  });

const payloadSchema = z.object({ events: z.array(notificationSchema).min(1).max(1000) });

export type Notification = z.infer<typeof notificationSchema>;

/** A ProviderNotification message as the service receives it (the REST body's single form is a list of one). */
export interface NotificationInput {
  type?: string;
  emailId?: string;
  messageId?: string;
  reason?: string;
  bounceType?: string;
  occurredAt?: string;
}

export function parseWebhookPayload(events: NotificationInput[]): Notification[] {
  return parseOrThrow(payloadSchema, { events }).events;
}

/** Applies notifications idempotently: a repeated one changes nothing and emits nothing. */
export class ProviderWebhooks {
  constructor(
    private readonly pool: Pool,
    private readonly emails: EmailsStore,
  ) {}

  async handle(events: NotificationInput[]): Promise<{ processed: number; ignored: number }> {
    let processed = 0;
    let ignored = 0;
    for (const n of parseWebhookPayload(events)) {
      const email = await this.emails.findForNotification({
        emailId: n.emailId && isUuid(n.emailId) ? n.emailId : undefined,
        messageId: n.messageId,
      });
      if (!email) {
        ignored++;
        continue;
      }
      const at = n.occurredAt ? new Date(n.occurredAt) : new Date();
      const applied = await withTransaction(this.pool, async (tx) => {
        if (n.type === 'delivery') {
          if (!(await this.emails.markDelivered(tx, email.id))) return false;
          const m = lifecycleMessage(email, 'delivery', {}, at);
          await enqueueMessage(tx, m);
          return true;
        }
        if (n.type === 'bounce') {
          const reason = n.reason ?? 'bounced';
          // A soft bounce is recorded as an event; only a hard one ends delivery to the address.
          if (n.bounceType === 'hard') {
            if (!(await this.emails.markBounced(tx, email.id, reason))) return false;
            await this.emails.suppress(tx, email.project_id, email.to_email, 'bounce', email.id);
          }
          const m = lifecycleMessage(email, 'bounce', { reason, bounceType: n.bounceType }, at);
          await enqueueMessage(tx, m);
          return true;
        }
        if (!(await this.emails.markComplained(tx, email.id))) return false;
        await this.emails.suppress(tx, email.project_id, email.to_email, 'complaint', email.id);
        const m = lifecycleMessage(email, 'complaint', n.reason ? { reason: n.reason } : {}, at);
        await enqueueMessage(tx, m);
        return true;
      });
      if (applied) processed++;
      else ignored++;
    }
    return { processed, ignored };
  }
}
