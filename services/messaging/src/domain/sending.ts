import { templateVariables } from '@svc/lib/json-object';
import type { ContactDirectory } from './contact-directory.js';
import type { EmailBatches, QueuedBatch, QueuedStatus, SuppressionReason } from './email-batch.js';
import { parseQueueRequest, type QueueInput } from './queue-request.js';
import { KeyAlreadyRecorded, type RecordedSend, type SendIdempotency, type SendRecords } from './send-records.js';
import { parseSendRequest, type SendInput, type SendLimits } from './send-request.js';
import type { SendingSuspensions } from './sending-suspension.js';

export interface SendResult {
  /** status: queued or suppressed (withheld, see reason); answers recorded before it existed have none. */
  emails: {
    contactId: string;
    contactEmail: string;
    emailId: string;
    status?: QueuedStatus;
    reason?: SuppressionReason;
  }[];
  timestamp: Date;
}

export interface SendingDeps {
  batches: EmailBatches;
  contacts: ContactDirectory;
  limits?: SendLimits;
  /** Idempotency-Key records kept with the queued emails. */
  records: SendRecords;
  /** A suspended project sends nothing (403 PROJECT_SUSPENDED); replays of committed sends still answer. */
  suspensions: Pick<SendingSuspensions, 'check'>;
}

/**
 * POST /v1/send (SendEmail): validates, upserts the recipients as contacts in one contacts call,
 * then renders and queues one email per recipient like QueueEmails, in one transaction.
 * QueueEmails: the same rendering and queueing for callers that already know the contacts.
 */
export class Sending {
  constructor(private readonly d: SendingDeps) {}

  /** With `idempotency`, a repeat of a committed send answers the recorded result and queues nothing. */
  async send(projectId: string, input: SendInput, idempotency?: SendIdempotency): Promise<RecordedSend> {
    const earlier = idempotency && (await this.d.records.replay(projectId, idempotency));
    if (earlier) return earlier;
    const req = parseSendRequest(input, this.d.limits);
    await this.d.suspensions.check(projectId);
    // An inline send is transactional; a template send is of the template's type.
    const content = await this.d.batches.prepare(projectId, {
      templateId: req.template,
      subject: req.subject,
      body: req.body,
      from: req.from,
      replyTo: req.reply,
      headers: req.headers,
      attachments: req.attachments,
    });
    // SPEC.md rule 2: recipients in order; the contacts service writes them in that order.
    const upserted = await this.d.contacts.upsertMany(
      projectId,
      req.to.map((t) => t.email),
      { subscribed: req.subscribed, data: req.data },
    );
    const recipients = upserted.map(({ contact, oneOff }, i) => ({
      contactId: contact.id,
      email: contact.email,
      name: req.to[i].name ?? '',
      subscribed: contact.subscribed,
      // As a tracked event's data: a nested one-off value sits beside the stored values of its object.
      variables: templateVariables(contact.data, oneOff),
    }));
    try {
      return sendResult(
        await this.d.batches.queue(projectId, content, recipients, { source: 'transactional' }, { idempotency }),
      );
    } catch (err) {
      // A concurrent duplicate committed first: its answer stands, this one's emails were rolled back.
      const winner = err instanceof KeyAlreadyRecorded && (await this.d.records.replay(projectId, idempotency!));
      if (winner) return winner;
      throw err;
    }
  }

  /** QueueEmails: a batch for contacts the caller already knows (campaigns, workflows). */
  async queue(projectId: string, input: QueueInput): Promise<QueuedBatch> {
    const req = parseQueueRequest(input, this.d.limits);
    await this.d.suspensions.check(projectId);
    const content = await this.d.batches.prepare(projectId, req.content);
    // The caller's `subscribed` may be old (a campaign's audience snapshot, a workflow's contact read minutes
    // ago): marketing mail asks the contacts service now, so an unsubscribe during a long send is honoured.
    // Test mail goes to the address a person typed in: it keeps the caller's view.
    let recipients = req.recipients;
    if (content.type === 'MARKETING' && !req.origin.test) {
      const now = await this.d.contacts.subscribedNow(projectId, recipients);
      recipients = recipients.map((r) => ({ ...r, subscribed: now.has(r.contactId) }));
    }
    // A recipient that does not render answers "failed"; the others are queued.
    return this.d.batches.queue(projectId, content, recipients, req.origin, { perRecipientFailures: true });
  }
}

const sendResult = (b: QueuedBatch): SendResult => ({
  // /v1/send has no dedupe keys and fails whole on a render error: every email is queued or suppressed.
  emails: b.emails.map((e) => ({
    contactId: e.contactId,
    contactEmail: e.contactEmail,
    emailId: e.emailId,
    status: e.status,
    ...(e.reason ? { reason: e.reason } : {}),
  })),
  timestamp: b.timestamp,
});
