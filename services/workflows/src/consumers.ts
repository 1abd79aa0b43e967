import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Bus } from '@svc/lib/bus';
import { on, onBatch, rawField, subscribeTopics, type TopicRoute } from '@svc/lib/bus-topic';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import { workflowLoopGuards } from '@svc/lib/metrics';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { joinProjectWipes, type WipeReports } from '@svc/lib/project-wipe';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import type { EmailLifecycle } from '@svc/proto/svc/messaging/v1/events_pb';
import { SEGMENTS_TOPICS } from '@svc/proto/topics/segments';
import type { Executions, TrackedEvent } from './domain/executions.js';
import type { WorkflowsStore } from './store/workflows-store.js';
import { type TrackedMessage, trackedItem, trackedMessage, trackedPayload } from './tracked-message.js';

/** Events that reach workflows from their own subjects (emails.<type>, segments.membership.changed). */
const fromOwnSubject = (name: string) => name.startsWith('email.') || /^segment\.[^.]+\.(entry|exit)$/.test(name);

/**
 * Messages handled at a time by each consumer. Order does not matter to them: re-entry is decided
 * under a per-(workflow, contact) lock, and waits compare the events' own times (waiting_since, at).
 * The enrolments of the messages in hand share one transaction (Executions' group commit): 128 in hand
 * made those statements ~23 enrolments each where 32 made ~13 (bench/workflow.ts, BENCH_COUNT=1).
 */
const CONCURRENCY = 128;

/**
 * An email lifecycle step as the `email.<type>` event workflows react to, keyed by `eventId`; test mail and received
 * mail sent automatically count for nothing (the first as in campaign and workflow statistics), and a step without
 * a valid project, contact or type is dropped.
 */
function lifecycleEvent(m: EmailLifecycle, eventId: string): TrackedEvent | undefined {
  if (m.test || !isUuid(m.projectId) || !isUuid(m.contactId) || !/^[a-z_]+$/.test(m.type)) return undefined;
  // An auto-reply (RFC 3834) neither starts nor resumes workflows: a reply to it could ping-pong with the responder.
  if (m.automatic) {
    workflowLoopGuards.inc({ guard: 'automatic_mail' });
    return undefined;
  }
  const sourceWorkflowId = isUuid(m.workflowId) ? m.workflowId : undefined;
  return {
    projectId: m.projectId,
    contactId: m.contactId,
    eventId,
    name: `email.${m.type}`,
    data: { emailId: m.emailId, ...((m.data ?? {}) as Record<string, unknown>) },
    at: m.occurredAt ? timestampDate(m.occurredAt) : new Date(),
    // Mail a workflow sent does not start that workflow again (on email.sent it would mail without end), and starts
    // others one deeper in the chain (Executions, MAX_CHAIN_DEPTH).
    sourceWorkflowId,
    sourceDepth: sourceWorkflowId ? m.workflowDepth : undefined,
  };
}

/** events.tracked read from the payload as received; one in another form is decoded (or found malformed). */
function trackedRoute(handler: (m: TrackedMessage) => Promise<void>): TopicRoute {
  const decoded = on(CONTACTS_TOPICS.eventTracked, (m, meta) => handler(trackedMessage(m, meta.id)));
  return {
    subject: decoded.subject,
    deliver: (m) => {
      const read = trackedPayload(m.data, m.id);
      return read === undefined ? decoded.deliver(m) : handler(read);
    },
  };
}

/**
 * events.tracked_batch: each event handled as its own events.tracked would be (keyed by its own event id, so a
 * redelivered batch starts nothing twice); an event that does not read is skipped alone.
 */
function trackedBatchRoute(handler: (m: TrackedMessage) => Promise<void>): TopicRoute {
  return onBatch(CONTACTS_TOPICS.eventsTrackedBatch, 'events', async (batch, meta) => {
    await Promise.all(
      batch.items.map((item, i) => {
        const m = trackedItem(batch.projectId, item, `${meta.id}/${i}`);
        return m ? handler(m) : undefined;
      }),
    );
  });
}

/**
 * Start workflows and resume WAIT_FOR_EVENT steps: events.tracked (client events and contact.*; a batch of tracks'
 * come many per message as events.tracked_batch),
 * emails.<type> as `email.<type>` (data: emailId and the step's values) and
 * segments.membership.changed as `segment.<slug>.entry|exit` (data: segmentId), straight from the
 * services that publish them. contacts records the last two kinds as events too: the segment.* copies
 * (and email.* copies published on events.tracked before they had events.email) are skipped here, so
 * each starts a workflow once. Durable and
 * idempotent: an execution is keyed by (workflow, event or message id), so a redelivered message
 * starts nothing new.
 */
export async function subscribeWorkflowsConsumers(
  bus: Bus,
  executions: Executions,
  store: WorkflowsStore,
  identity: WipeReports,
  wiped: WipedProjects,
  logger: Logger,
) {
  const tracked = (m: TrackedMessage): Promise<void> => {
    if (!isUuid(m.projectId) || !isUuid(m.contactId) || !m.name || fromOwnSubject(m.name)) return Promise.resolve();
    return executions.eventTracked(m);
  };
  await subscribeTopics(
    bus,
    'workflows-triggers',
    wiped.routes([trackedRoute(tracked), trackedBatchRoute(tracked)]),
    logger,
    {
      concurrency: CONCURRENCY,
    },
  );
  await subscribeTopics(
    bus,
    'workflows-lifecycle',
    wiped.routes([
      on(
        MESSAGING_TOPICS.emailLifecycle,
        async (m, meta) => {
          const event = lifecycleEvent(m, meta.id);
          if (event) await executions.eventTracked(event);
        },
        // Most lifecycle messages concern no workflow (a cached answer): acknowledged undecoded.
        { skip: (d) => executions.ignores(rawField(d, 'projectId'), `email.${rawField(d, 'type')}`) },
      ),
      on(SEGMENTS_TOPICS.membershipChanged, async (m, meta) => {
        if (!isUuid(m.projectId) || !isUuid(m.contactId) || !/^[a-z0-9_-]+$/.test(m.slug)) return;
        if (m.change !== 'entry' && m.change !== 'exit') return;
        await executions.eventTracked({
          projectId: m.projectId,
          contactId: m.contactId,
          eventId: meta.id,
          name: `segment.${m.slug}.${m.change}`,
          data: { segmentId: m.segmentId },
          at: m.occurredAt ? timestampDate(m.occurredAt) : new Date(),
        });
      }),
    ]),
    logger,
    { concurrency: CONCURRENCY },
  );
  // Sent mail comes many emails per message (a delivery batch's of one project) instead of one `emails.sent` each:
  // each email is handled as its `emails.sent` was, keyed by the message id and its place in the message.
  await subscribeTopics(
    bus,
    'workflows-emails-sent',
    wiped.routes([
      on(
        MESSAGING_TOPICS.emailsSent,
        async (batch, meta) => {
          await Promise.all(
            batch.emails.map(async (m, i) => {
              const event = m.type === 'sent' ? lifecycleEvent(m, `${meta.id}/${i}`) : undefined;
              if (event && !executions.ignores(event.projectId, event.name)) await executions.eventTracked(event);
            }),
          );
        },
        { skip: (d) => executions.ignores(rawField(d, 'projectId'), 'email.sent') },
      ),
    ]),
    logger,
    { concurrency: 4 },
  );
  await joinProjectWipes(bus, {
    service: 'workflows',
    identity,
    wiped,
    logger,
    wipe: (p) => store.removeProject(p),
  });
}
