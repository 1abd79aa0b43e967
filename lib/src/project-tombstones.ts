import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import type { Bus } from './bus.js';
import { rawField, readBusMessage, type TopicRoute } from './bus-topic.js';
import type { Pool, Queryable } from './db.js';
import type { Migration } from './migrate.js';

/**
 * The projects a service wiped (README "Project reset and deletion"), so that a message of one handled afterwards
 * (mail that was in flight, a redelivery, a consumer's backlog) writes nothing again. The column is `id`, not
 * `project_id`: the record is not the project's data (test/project-reset.test.ts reads every `project_id` table).
 */
export const wipedProjectsMigration = (id: string): Migration => ({
  id,
  sql: `
    CREATE TABLE wiped_projects (
      id uuid PRIMARY KEY,
      wiped_at timestamptz NOT NULL DEFAULT now()
    );
  `,
});

/**
 * Resets are recorded too (`kind`): the project lives on, so only messages written before its last reset's wipe
 * (`wiped_at`) are dropped. Rows recorded before this column were deletions.
 */
export const wipedProjectsKindMigration = (id: string): Migration => ({
  id,
  sql: "ALTER TABLE wiped_projects ADD COLUMN kind text NOT NULL DEFAULT 'delete';",
});

/** How often each process reads the table again (a `watch` message is at most once; other replicas wipe). */
const RELOAD_MS = 30_000;

/**
 * A service's wiped projects, in memory: loaded from `wiped_projects` at start and read again every RELOAD_MS,
 * added to as this process wipes one (`record`), and, for a deletion, as soon as identity asks for it
 * (`identity.project.wipe_requested` of kind `delete`, watched by every process). A deleted project's messages
 * write nothing; a reset project's write nothing when written (their `occurredAt`, `createdAt`) before the reset's
 * wipe in this service, and as usual otherwise (a message that carries no time, too). Consumers that write a
 * project's rows from bus messages skip such messages without a query (`routes`), and batched writers drop such
 * items again as a batch is written (`drops`).
 */
export class WipedProjects {
  private readonly deleted = new Set<string>();
  /** Reset projects: the time (ms) of the last reset's wipe in this service. */
  private readonly resets = new Map<string, number>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly pool: Pool) {}

  /** Loads the table and keeps the sets fresh; call before subscribing the consumers that use them. */
  async start(bus: Bus): Promise<void> {
    bus.watch([IDENTITY_TOPICS.projectWipeRequested.subject], (m) => {
      try {
        const w = readBusMessage(IDENTITY_TOPICS.projectWipeRequested, m.data);
        if (w.kind === 'delete' && w.projectId) this.deleted.add(w.projectId);
      } catch {
        // A payload that does not decode names no project; the durable wipe consumer logs it.
      }
    });
    await this.load();
    this.timer = setInterval(() => void this.load().catch(() => undefined), RELOAD_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async load(): Promise<void> {
    const { rows } = await this.pool.query<{ id: string; kind: string; wiped_at: Date }>(
      'SELECT id::text, kind, wiped_at FROM wiped_projects',
    );
    for (const r of rows) {
      if (r.kind === 'delete') this.deleted.add(r.id);
      else this.resetAt(r.id, r.wiped_at.getTime());
    }
  }

  private resetAt(projectId: string, at: number): void {
    if (at > (this.resets.get(projectId) ?? 0)) this.resets.set(projectId, at);
  }

  /** True when a message of the project written at `at` (RFC 3339 or a Date; '' or none: unknown) writes nothing. */
  drops(projectId: string, at?: Date | string): boolean {
    if (this.deleted.has(projectId)) return true;
    const reset = this.resets.get(projectId);
    if (reset === undefined || !at) return false;
    const time = typeof at === 'string' ? Date.parse(at) : at.getTime();
    return time < reset;
  }

  /**
   * Records the wipe before the service's rows go (its own statement, committed first): a writer that checks
   * afterwards drops the project's messages, and the delete that follows sees whatever was written before. A
   * deletion stays one; a reset moves the project's time on (never a deletion back to a reset).
   */
  async record(projectId: string, kind: string, db: Queryable = this.pool): Promise<void> {
    if (kind === 'delete') {
      this.deleted.add(projectId);
      await db.query(
        `INSERT INTO wiped_projects (id, kind) VALUES ($1, 'delete')
         ON CONFLICT (id) DO UPDATE SET kind = 'delete', wiped_at = now()`,
        [projectId],
      );
      return;
    }
    const { rows } = await db.query<{ wiped_at: Date }>(
      `INSERT INTO wiped_projects (id, kind) VALUES ($1, 'reset')
       ON CONFLICT (id) DO UPDATE SET wiped_at = now() WHERE wiped_projects.kind = 'reset'
       RETURNING wiped_at`,
      [projectId],
    );
    if (rows[0]) this.resetAt(projectId, rows[0].wiped_at.getTime());
  }

  /**
   * The routes, acknowledging without decoding the messages `drops` names: by their top-level `projectId` and
   * `occurredAt` (lifecycle, membership changes) or `createdAt` (tracked events).
   */
  routes(routes: TopicRoute[]): TopicRoute[] {
    const dropped = (data: unknown) =>
      this.drops(rawField(data, 'projectId'), rawField(data, 'occurredAt') || rawField(data, 'createdAt'));
    return routes.map((r) => ({
      subject: r.subject,
      skip: (data) => dropped(data) || r.skip?.(data) === true,
      deliver: (m) => (dropped(m.data) ? Promise.resolve() : r.deliver(m)),
    }));
  }
}
