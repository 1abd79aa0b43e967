import type { WipedProjects } from '@svc/lib/project-tombstones';
import { releaseAfterFailure, type Pool, type PoolClient } from '@svc/lib/db';
import { DueWorkLoop } from '@svc/lib/due-work';
import { smtpResults } from '@svc/lib/metrics';
import type { Logger } from '@svc/lib/logger';
import type { OutboxMessage } from '@svc/lib/bus-topic';
import { enqueueLifecycle } from '../domain/activity-feed.js';
import { domainOf } from '../domain/address.js';
import { classifyFailure, type SmtpFailure } from '../domain/delivery-outcome.js';
import {
  campaignSentMessages,
  emailsSentMessages,
  lifecycleMessage,
  lifecyclePayload,
  type LifecyclePayload,
} from '../domain/email-events.js';
import { SANDBOX_DOMAIN, SandboxRefused, type SandboxSender } from '../domain/sandbox-sender.js';
import type { SendThrottle } from '../domain/throttle.js';
import type { MailMessage, MailTransport } from '../delivery/smtp-transport.js';
import { ActivityStore } from '../store/activity-store.js';
import type { DomainsStore } from '../store/domains-store.js';
import {
  DELIVERY_PLAN_SETTINGS,
  type ClaimedEmail,
  type DeliveryOutcomes,
  type EmailsStore,
} from '../store/emails-store.js';
import { SendAttachmentsStore, type SendAttachment } from '../store/send-attachments-store.js';
import { messageBuilder, type MessageBuilder } from './signing-pool.js';

export interface DeliveryWorkerOptions {
  maxAttempts: number;
  retryBaseMs: number;
  batchSize?: number;
  /** Batches in flight at once (each claims its own rows). */
  lanes?: number;
  pollMs?: number;
  leaseSeconds?: number;
  /** Threads that build and DKIM-sign messages (signing-pool.ts); 0 builds on the main thread. */
  dkimWorkers?: number;
  /** The signing threads' nice increment over the process (0: the same priority). */
  dkimThreadNice?: number;
  /** Embedded mode with the local sink only; without it, sandbox mail is failed, never relayed. */
  sandbox?: SandboxSender;
  /** Wiped projects: a batch's feed rows of a project deleted while its mail was out are not written. */
  wiped?: Pick<WipedProjects, 'drops'>;
}

interface DkimKey {
  domainName: string;
  keySelector: string;
  privateKey: string;
}

const DKIM_CACHE_MS = 60_000;

/**
 * The send queue's consumer: locks due rows (FOR UPDATE SKIP LOCKED, so replicas share the work) in a
 * transaction held for the batch, applies the per-project throttle, hands messages to the pooled SMTP
 * transport and records every outcome with its lifecycle message in that same transaction. The lock is the
 * lease: no `sending` row version is written, and a worker that dies releases its rows with its connection.
 */
export class DeliveryWorker {
  private readonly loop: DueWorkLoop<ClaimedEmail>;
  private readonly dkimCache = new Map<string, { key: DkimKey | null; at: number }>();
  private readonly attachments: SendAttachmentsStore;
  private readonly activity: ActivityStore;
  private readonly builder: MessageBuilder;
  /** Each claimed batch's transaction, which holds the rows' locks until its outcomes are committed. */
  private readonly locks = new WeakMap<ClaimedEmail[], PoolClient>();

  constructor(
    private readonly pool: Pool,
    private readonly emails: EmailsStore,
    private readonly domains: DomainsStore,
    private readonly transport: MailTransport,
    private readonly throttle: SendThrottle,
    private readonly logger: Logger,
    private readonly opts: DeliveryWorkerOptions,
  ) {
    const leaseSeconds = opts.leaseSeconds ?? 120;
    this.attachments = new SendAttachmentsStore(pool);
    this.activity = new ActivityStore(pool);
    this.builder = messageBuilder(opts.dkimWorkers ?? 0, logger, opts.dkimThreadNice ?? 0);
    this.loop = new DueWorkLoop({
      name: 'delivery',
      logger,
      claim: (limit) => this.claim(limit, leaseSeconds),
      run: (rows) => this.deliverBatch(rows),
      batchSize: opts.batchSize ?? 100,
      lanes: opts.lanes ?? 4,
      pollMs: opts.pollMs ?? 500,
      notify: { pool, channel: 'emails_queued' },
      reclaim: { everyMs: 30_000, run: () => this.emails.requeueExpiredLeases() },
    });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  kick(): void {
    this.loop.kick();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.builder.close();
  }

  /**
   * Opens the batch's transaction and locks up to `limit` due rows in it. The session may sit idle in it while
   * the batch is sent: for up to the lease, not the server's default idle-in-transaction timeout. Its statements
   * are planned with DELIVERY_PLAN_SETTINGS, sent with the BEGIN (no round trip of their own).
   */
  private async claim(limit: number, leaseSeconds: number): Promise<ClaimedEmail[]> {
    const tx = await this.pool.connect();
    try {
      const idle = `SET LOCAL idle_in_transaction_session_timeout = ${Math.round(leaseSeconds * 1000)}`;
      await tx.query(`BEGIN; ${idle}; ${DELIVERY_PLAN_SETTINGS}`);
      const rows = await this.emails.lockDue(tx, limit);
      if (rows.length) {
        this.locks.set(rows, tx);
        return rows;
      }
      await tx.query('COMMIT');
    } catch (err) {
      await releaseAfterFailure(tx, err);
      throw err;
    }
    tx.release();
    return [];
  }

  private async deliverBatch(rows: ClaimedEmail[]): Promise<void> {
    const tx = this.locks.get(rows);
    if (!tx) throw new Error('delivery batch without its transaction');
    this.locks.delete(rows);
    try {
      await this.deliverLocked(tx, rows);
      await tx.query('COMMIT');
    } catch (err) {
      // Rolled back: the rows are due again (a message the server took may go twice: at-least-once).
      await releaseAfterFailure(tx, err);
      throw err;
    }
    tx.release();
  }

  private async deliverLocked(tx: PoolClient, rows: ClaimedEmail[]): Promise<void> {
    const ready: ClaimedEmail[] = [];
    const held: { id: string; wait: number }[] = [];
    // One throttle call per project of the batch (rows stay in claim order within a project).
    const byProject = new Map<string, ClaimedEmail[]>();
    for (const row of rows) {
      const of = byProject.get(row.project_id);
      if (of) of.push(row);
      else byProject.set(row.project_id, [row]);
    }
    for (const [projectId, of] of byProject) {
      const { granted, waitMs } = await this.throttle.takeMany(projectId, of.length);
      ready.push(...of.slice(0, granted));
      held.push(...of.slice(granted).map((r) => ({ id: r.id, wait: waitMs })));
    }
    if (held.length)
      await this.emails.postpone(
        tx,
        held.map((h) => h.id),
        Math.max(...held.map((h) => h.wait)),
      );

    const outcomes: DeliveryOutcomes = { sent: [], retry: [], bounced: [], failed: [] };
    const messages: OutboxMessage[] = [];
    const sent: ClaimedEmail[] = [];
    const sentPayloads: LifecyclePayload[] = [];
    const suppress: ClaimedEmail[] = [];
    // A send's attachments are stored once: one read serves all of the batch's emails of that send.
    const sendIds = [...new Set(ready.map((r) => r.send_id).filter((id): id is string => id !== null))];
    const attachments = await this.attachments.bySends(sendIds);
    await Promise.all(
      ready.map(async (row) => {
        try {
          // Built and signed on the signing pool's threads; only the SMTP exchange stays on this one.
          const built = await this.builder.build(await this.message(row, attachments.get(row.send_id ?? '') ?? []));
          const response = await this.transport.sendRaw(built);
          outcomes.sent.push({ id: row.id, response });
          sent.push(row);
          sentPayloads.push(lifecyclePayload(row, 'sent', { messageId: row.message_id }));
        } catch (err) {
          if (err instanceof SandboxRefused) {
            outcomes.failed.push({ id: row.id, reason: err.message });
            messages.push(lifecycleMessage(row, 'bounce', { reason: err.message, bounceType: 'soft' }));
            return;
          }
          const outcome = classifyFailure(err as SmtpFailure, row.attempts, this.opts);
          if (outcome.kind === 'retry') {
            outcomes.retry.push({ id: row.id, delayMs: outcome.delayMs, error: outcome.reason });
          } else if (outcome.kind === 'bounce') {
            outcomes.bounced.push({ id: row.id, reason: outcome.reason });
            suppress.push(row);
            messages.push(lifecycleMessage(row, 'bounce', { reason: outcome.reason, bounceType: 'hard' }));
          } else {
            outcomes.failed.push({ id: row.id, reason: outcome.reason });
            messages.push(lifecycleMessage(row, 'bounce', { reason: outcome.reason, bounceType: 'soft' }));
          }
        }
      }),
    );
    await this.emails.recordOutcomes(tx, outcomes, true);
    for (const row of suppress) await this.emails.suppress(tx, row.project_id, row.to_email, 'bounce', row.id);
    // Sent mail goes out as one `deliveries.emails_sent` per project of the batch (no `emails.sent` per email), and the
    // feed's `email.sent` rows are written with the outcomes: the feed does not read them back from the bus.
    // Campaigns count their sent mail from one message per campaign of the batch. All in the same INSERT.
    await enqueueLifecycle(
      tx,
      this.activity,
      [...messages, ...emailsSentMessages(sentPayloads), ...campaignSentMessages(sent)],
      this.opts.wiped,
    );
    for (const result of ['sent', 'retry', 'bounced', 'failed'] as const)
      if (outcomes[result].length) smtpResults.inc({ result }, outcomes[result].length);
    if (outcomes.retry.length)
      this.logger.info({ count: outcomes.retry.length }, 'temporary SMTP failures; retrying later');
  }

  private async message(row: ClaimedEmail, sendAttachments: SendAttachment[]): Promise<MailMessage> {
    const dkim = await this.dkimKey(row.project_id, domainOf(row.from_email));
    const message: MailMessage = {
      messageId: row.message_id,
      from: { name: row.from_name, address: row.from_email },
      to: { name: row.to_name, address: row.to_email },
      subject: row.subject,
      html: row.html,
      text: row.text,
      headers: row.headers,
      attachments:
        row.attachments.length || sendAttachments.length
          ? [
              // Rows queued before migration 004 carry their attachments as base64.
              ...row.attachments.map((a) => ({ ...a, content: Buffer.from(a.content, 'base64') })),
              ...sendAttachments,
            ].map((a) => ({
              filename: a.filename,
              content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
              contentType: a.contentType,
              contentDisposition: a.disposition,
              ...(a.contentId ? { cid: a.contentId } : {}),
            }))
          : [],
    };
    // Set only when there is one (no spread objects per message: each message is cloned to a signing thread).
    if (row.reply_to) message.replyTo = row.reply_to;
    if (dkim) message.dkim = dkim;
    return message;
  }

  /** The DKIM key of the domain that covers the sender (cached for a minute). */
  private async dkimKey(projectId: string, domain: string): Promise<DkimKey | null> {
    if (domain === SANDBOX_DOMAIN) {
      const s = this.opts.sandbox;
      if (!s) throw new SandboxRefused();
      return { domainName: s.domain, keySelector: s.selector, privateKey: s.privateKey };
    }
    const cacheKey = `${projectId}:${domain}`;
    const hit = this.dkimCache.get(cacheKey);
    if (hit && Date.now() - hit.at < DKIM_CACHE_MS) return hit.key;
    const row = await this.domains.verifiedCovering(projectId, domain);
    const key = row
      ? { domainName: row.domain, keySelector: row.dkim_selector, privateKey: row.dkim_private_key }
      : null;
    if (this.dkimCache.size > 10_000) this.dkimCache.clear();
    this.dkimCache.set(cacheKey, { key, at: Date.now() });
    return key;
  }
}
