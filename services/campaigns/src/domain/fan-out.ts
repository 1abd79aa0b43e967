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
  /**
   * A full window: 0 gives the campaign back to the scheduler (due again after WINDOW_DELAY_MS); otherwise the
   * slice looks again every `windowPollMs` until its end, holding the campaign (no release and claim per wait).
   */
  windowPollMs?: number;
}

/** Back-off of a campaign whose step failed (a dependency down, the sender domain unverified). */
const RETRY_DELAY_MS = 5_000;
/** Re-check of a full send window given back to the scheduler. */
const WINDOW_DELAY_MS = 100;

/** The dedupe key messaging keeps per project: a retried hand-over never queues a recipient twice. */
export const dedupeKey = (campaignId: string, contactId: string) => `campaign:${campaignId}:${contactId}`;

type Step = 'more' | 'window' | 'stop';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One claim's work on a campaign: the snapshot and the hand-over run side by side and end together. */
class Slice {
  /** Set when either part stopped (lease lost, cancelled, failed): the other ends at its next step. */
  ended = false;
  /** The snapshot streams in this slice; the hand-over may catch up with it and wait for its next checkpoint. */
  snapshotRunning = false;
  /** How often the snapshot moved its checkpoint: a hand-over that read before a move does not wait for the next. */
  checkpoints = 0;
  private wake?: () => void;

  constructor(
    readonly campaign: CampaignRow,
    readonly token: string,
    readonly deadline: number,
  ) {}

  /** The snapshot moved its checkpoint (or ended): a hand-over waiting for it goes on. */
  progressed(): void {
    this.checkpoints++;
    this.wake?.();
    this.wake = undefined;
  }

  /**
   * Resolves at the snapshot's next checkpoint after the `seen`th or its end: at once when it does not run or has
   * moved since (a move between the hand-over's read and this call would otherwise wake nobody).
   */
  nextCheckpoint(seen: number): Promise<void> {
    if (!this.snapshotRunning || this.ended || this.checkpoints !== seen) return Promise.resolve();
    return new Promise((resolve) => {
      const before = this.wake;
      this.wake = () => {
        before?.();
        resolve();
      };
    });
  }

  end(): void {
    this.ended = true;
    this.progressed();
  }
}

/**
 * Fan-out of one leased campaign, in two checkpointed parts that run side by side:
 * 1. snapshot: the audience is streamed from contacts (in contact id order, resuming after
 *    `snapshot_after`) into campaign_recipients, the checkpoint moving in the same transaction;
 * 2. hand-over: pending recipients go to messaging's QueueEmails in batches, each recipient with
 *    the dedupe key campaign:<id>:<contact>; then the hand-over checkpoint (`handover_after`) moves past the
 *    round in one write, and only recipients not queued (suppressed, failed) get their answer on their row.
 *    A crash between the two re-sends the round and messaging answers "duplicate" for everyone already queued.
 * The hand-over reads committed recipients only, and every committed recipient is at or before the snapshot's
 * checkpoint (written in the same transaction), so it never passes the snapshot; when it catches up it waits for
 * the snapshot's next checkpoint. SENT when the snapshot is complete and nobody is pending.
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
    const slice = new Slice(campaign, campaign.lease_token!, Date.now() + this.opts.sliceMs);
    // Either part that stops or fails ends the other at its next step.
    const part = async (work: () => Promise<Step>): Promise<Step> => {
      try {
        const step = await work();
        if (step === 'stop') slice.end();
        return step;
      } catch (err) {
        slice.end();
        throw err;
      }
    };
    const [snapshot, handOver] = await Promise.allSettled([
      campaign.snapshot_done ? Promise.resolve<Step>('more') : part(() => this.snapshot(slice)),
      part(() => this.handOver(slice)),
    ]);
    let delay = 0;
    let error: string | undefined;
    const failed = [snapshot, handOver].find((r) => r.status === 'rejected');
    if (failed) {
      const err = failed.reason;
      delay = RETRY_DELAY_MS;
      error = err instanceof Error ? err.message : String(err);
      const level = isDependencyUnavailable(err) || (err instanceof AppError && err.status === 503) ? 'warn' : 'error';
      this.logger[level]({ err, campaignId: campaign.id }, 'campaign fan-out step failed; retrying');
    } else {
      const steps = [snapshot, handOver].map((r) => (r as PromiseFulfilledResult<Step>).value);
      if (steps.includes('stop')) return;
      if (steps[1] === 'window') delay = WINDOW_DELAY_MS;
    }
    await this.store.release(campaign.id, slice.token, delay, error);
  }

  /** Whether a part should end: the slice is over, the other part stopped, or the service stops. */
  private over(s: Slice): boolean {
    return this.stopping || s.ended || Date.now() >= s.deadline;
  }

  private async snapshot(s: Slice): Promise<Step> {
    const c = s.campaign;
    s.snapshotRunning = true;
    try {
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
        if (!(await this.store.addSnapshotBatch(c.id, s.token, recipients, last, false))) return 'stop';
        after = last;
        c.snapshot_after = last;
        s.progressed();
        // Leaving the loop cancels the stream; the next slice resumes after the checkpoint.
        if (this.over(s)) return 'more';
      }
      if (!(await this.store.addSnapshotBatch(c.id, s.token, [], after, true))) return 'stop';
      await this.store.analyzeRecipients();
      c.snapshot_done = true;
      return 'more';
    } finally {
      s.snapshotRunning = false;
      s.progressed();
    }
  }

  private async handOver(s: Slice): Promise<Step> {
    const poll = this.opts.windowPollMs ?? 0;
    for (;;) {
      if (this.over(s)) return 'more';
      const seen = s.checkpoints;
      const step = await this.round(s);
      if (step === 'caught-up') await s.nextCheckpoint(seen);
      else if (step === 'window') {
        if (!poll || Date.now() + poll >= s.deadline) return 'window';
        await sleep(poll);
      } else if (step === 'stop') return 'stop';
    }
  }

  /**
   * One hand-over round: up to `batchSize x parallel` pending recipients (as many as the window has room for, once
   * it has room for a batch or a quarter of the window), or "caught-up" when nobody is pending while the snapshot
   * still streams.
   */
  private async round(s: Slice): Promise<Step | 'caught-up'> {
    const c = s.campaign;
    const room = this.opts.window - (await this.store.inFlight(c.id));
    if (room <= 0 || room < Math.min(this.opts.batchSize, Math.ceil(this.opts.window / 4))) return 'window';
    // Read before the pending recipients: a snapshot done by then has all of its recipients committed.
    const snapshotDone = c.snapshot_done;
    const pending = await this.store.pending(
      c.id,
      c.handover_after,
      Math.min(room, this.opts.batchSize * this.opts.parallel),
    );
    if (!pending.length) {
      if (!snapshotDone) return 'caught-up';
      if (await this.store.finish(c.id, s.token))
        this.logger.info({ campaignId: c.id, projectId: c.project_id }, 'campaign sent');
      return 'stop';
    }
    const chunks: PendingRecipient[][] = [];
    for (let i = 0; i < pending.length; i += this.opts.batchSize)
      chunks.push(pending.slice(i, i + this.opts.batchSize));
    // Every chunk answered, or none is recorded: a chunk that fails sends the round again (its queued
    // recipients answer "duplicate"), so the checkpoint only ever moves past recipients messaging answered.
    // A cancel (or a lease taken over, or the project wiped) stops the hand-over before the next batch.
    const results = await this.store.whileHeld(c.id, s.token, async () =>
      (await Promise.all(chunks.map((chunk) => this.queue(c, chunk)))).flat(),
    );
    if (!results) return 'stop';
    const last = pending[pending.length - 1].contact_id;
    if (await this.store.recordHandOverBatch(c.id, s.token, results, last)) {
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
