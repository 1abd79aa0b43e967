import { AppError } from '@svc/lib/errors';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import type { Logger } from '@svc/lib/logger';
import type { CampaignRow } from '../store/campaign-row.js';
import type { FanOutStore, HandOver, PendingRecipient } from '../store/fan-out-store.js';
import { audienceTree, subscribedOnly } from './audience.js';
import { emailContent } from './campaigns.js';
import type { ContactsPort, MessagingPort } from './ports.js';

export interface FanOutOptions {
  /** Recipients per QueueEmails call. */
  batchSize: number;
  /** QueueEmails calls in flight at once for one campaign. */
  parallel: number;
  /** Handed over but not yet sent or bounced, at most (cancel stops within about this many). */
  window: number;
  /** How long one claim works on a campaign before giving it back (other campaigns, other replicas). */
  sliceMs: number;
}

/** Back-off of a campaign whose step failed (a dependency down, the sender domain unverified). */
const RETRY_DELAY_MS = 5_000;
/** Re-check of a full send window. */
const WINDOW_DELAY_MS = 100;

/** The dedupe key messaging keeps per project: a retried hand-over never queues a recipient twice. */
export const dedupeKey = (campaignId: string, contactId: string) => `campaign:${campaignId}:${contactId}`;

type Step = 'more' | 'window' | 'stop';

/**
 * Fan-out of one leased campaign, in two checkpointed phases:
 * 1. snapshot: the audience is streamed from contacts (in contact id order, resuming after
 *    `snapshot_after`) into campaign_recipients, the checkpoint moving in the same transaction;
 * 2. hand-over: pending recipients go to messaging's QueueEmails in batches, each recipient with
 *    the dedupe key campaign:<id>:<contact>; then the hand-over checkpoint (`handover_after`) moves past the
 *    round in one write, and only recipients not queued (suppressed, failed) get their answer on their row.
 *    A crash between the two re-sends the round and messaging answers "duplicate" for everyone already queued.
 * SENT when the snapshot is complete and nobody is pending.
 */
export class FanOut {
  private stopping = false;

  constructor(
    private readonly store: FanOutStore,
    private readonly contacts: ContactsPort,
    private readonly messaging: MessagingPort,
    private readonly opts: FanOutOptions,
    private readonly logger: Logger,
  ) {}

  /** Ends the slices in progress at their next step. */
  stop(): void {
    this.stopping = true;
  }

  async run(campaign: CampaignRow): Promise<void> {
    const token = campaign.lease_token!;
    const deadline = Date.now() + this.opts.sliceMs;
    let delay = 0;
    let error: string | undefined;
    try {
      for (;;) {
        const step = campaign.snapshot_done
          ? await this.handOver(campaign, token)
          : await this.snapshot(campaign, token, deadline);
        if (step === 'stop') return;
        if (step === 'window') {
          delay = WINDOW_DELAY_MS;
          break;
        }
        if (this.stopping || Date.now() >= deadline) break;
      }
    } catch (err) {
      delay = RETRY_DELAY_MS;
      error = err instanceof Error ? err.message : String(err);
      const level = isDependencyUnavailable(err) || (err instanceof AppError && err.status === 503) ? 'warn' : 'error';
      this.logger[level]({ err, campaignId: campaign.id }, 'campaign fan-out step failed; retrying');
    }
    await this.store.release(campaign.id, token, delay, error);
  }

  private async snapshot(c: CampaignRow, token: string, deadline: number): Promise<Step> {
    let after = c.snapshot_after;
    const batches = this.contacts.stream(c.project_id, audienceTree(c), subscribedOnly(c.type), after);
    for await (const batch of batches) {
      if (!batch.length) continue;
      const last = batch[batch.length - 1].id;
      const recipients = batch.map((b) => ({
        contactId: b.id,
        email: b.email,
        subscribed: b.subscribed,
        variables: b.data,
      }));
      if (!(await this.store.addSnapshotBatch(c.id, token, recipients, last, false))) return 'stop';
      after = last;
      c.snapshot_after = last;
      // Leaving the loop cancels the stream; the next slice resumes after the checkpoint.
      if (this.stopping || Date.now() >= deadline) return 'more';
    }
    if (!(await this.store.addSnapshotBatch(c.id, token, [], after, true))) return 'stop';
    c.snapshot_done = true;
    await this.store.analyzeRecipients();
    return 'more';
  }

  private async handOver(c: CampaignRow, token: string): Promise<Step> {
    // A cancel (or a lease taken over) stops the hand-over before the next batch.
    if (!(await this.store.stillHeld(c.id, token))) return 'stop';
    const room = this.opts.window - (await this.store.inFlight(c.id));
    if (room <= 0) return 'window';
    const pending = await this.store.pending(
      c.id,
      c.handover_after,
      Math.min(room, this.opts.batchSize * this.opts.parallel),
    );
    if (!pending.length) {
      if (await this.store.finish(c.id, token))
        this.logger.info({ campaignId: c.id, projectId: c.project_id }, 'campaign sent');
      return 'stop';
    }
    const chunks: PendingRecipient[][] = [];
    for (let i = 0; i < pending.length; i += this.opts.batchSize)
      chunks.push(pending.slice(i, i + this.opts.batchSize));
    // Every chunk answered, or none is recorded: a chunk that fails sends the round again (its queued
    // recipients answer "duplicate"), so the checkpoint only ever moves past recipients messaging answered.
    const results = (await Promise.all(chunks.map((chunk) => this.queue(c, chunk)))).flat();
    const last = pending[pending.length - 1].contact_id;
    if (await this.store.recordHandOverBatch(c.id, token, results, last)) {
      c.handover_after = last;
      return 'more';
    }
    // Cancelled (or the lease lost) while messaging queued the round: its answers go on the rows, so the
    // campaign's breakdown still says who was handed over.
    await this.store.recordHandOver(c.id, results);
    return 'stop';
  }

  /** One QueueEmails call and its answers; a request messaging refuses outright fails its recipients. */
  private async queue(c: CampaignRow, chunk: PendingRecipient[]): Promise<HandOver[]> {
    try {
      const answer = await this.messaging.queue(
        c.project_id,
        emailContent(c),
        chunk.map((r) => ({
          contactId: r.contact_id,
          email: r.email,
          subscribed: r.subscribed,
          variables: r.variables,
          dedupeKey: dedupeKey(c.id, r.contact_id),
        })),
        { campaignId: c.id, test: false },
      );
      return answer.map((a) => ({
        contactId: a.contactId,
        emailId: a.emailId || null,
        status: a.status === 'suppressed' ? 'suppressed' : a.status === 'failed' ? 'failed' : 'queued',
        error: a.error || null,
      }));
    } catch (err) {
      // 400/404/422: the content itself cannot be sent (say a Liquid syntax error); retrying changes nothing.
      // Anything else (503, 403 while the domain is unverified) is retried with back-off.
      if (!(err instanceof AppError) || ![400, 404, 422].includes(err.status)) throw err;
      this.logger.warn({ err, campaignId: c.id }, 'messaging refused a campaign batch; its recipients fail');
      return chunk.map((r) => ({ contactId: r.contact_id, emailId: null, status: 'failed', error: err.message }));
    }
  }
}
