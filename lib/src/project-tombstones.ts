import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import type { Bus } from './bus.js';
import { rawField, readBusMessage, type TopicRoute } from './bus-topic.js';
import type { Pool, Queryable } from './db.js';
import type { Migration } from './migrate.js';

/**
 * The projects a service wiped for a deletion (README "Project reset and deletion"): a project id is never used
 * again, so a message of one that arrives afterwards (mail that was in flight, a redelivery) writes nothing. The
 * column is `id`, not `project_id`: the tombstone is not the project's data (test/project-reset.test.ts reads every
 * `project_id` table). A reset is not recorded: the project lives on and its new data is taken as before.
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

/** How often each process reads the table again (a `watch` message is at most once). */
const RELOAD_MS = 30_000;

/**
 * A service's deleted projects, in memory: loaded from `wiped_projects` at start, added to as identity asks for a
 * deletion (`identity.project.wipe_requested` of kind `delete`, watched by every process) and read again now and
 * then. Consumers that write a project's rows from bus messages skip that project's messages without a query
 * (`routes`), and batched writers drop its items at write time (`has`).
 */
export class DeletedProjects {
  private readonly ids = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly pool: Pool) {}

  /** Loads the table and keeps the set fresh; call before subscribing the consumers that use it. */
  async start(bus: Bus): Promise<void> {
    bus.watch([IDENTITY_TOPICS.projectWipeRequested.subject], (m) => {
      try {
        const w = readBusMessage(IDENTITY_TOPICS.projectWipeRequested, m.data);
        if (w.kind === 'delete' && w.projectId) this.ids.add(w.projectId);
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
    const { rows } = await this.pool.query<{ id: string }>('SELECT id::text FROM wiped_projects');
    for (const r of rows) this.ids.add(r.id);
  }

  has(projectId: string): boolean {
    return this.ids.has(projectId);
  }

  /**
   * Records the deletion before the service's rows go (its own transaction, committed first), so a writer that
   * checks afterwards skips the project and the delete that follows sees whatever was written before.
   */
  async record(projectId: string, db: Queryable = this.pool): Promise<void> {
    this.ids.add(projectId);
    await db.query('INSERT INTO wiped_projects (id) VALUES ($1) ON CONFLICT DO NOTHING', [projectId]);
  }

  /** The routes, acknowledging a deleted project's messages (top-level `projectId`) without decoding them. */
  routes(routes: TopicRoute[]): TopicRoute[] {
    const deleted = (data: unknown) => this.ids.has(rawField(data, 'projectId'));
    return routes.map((r) => ({
      subject: r.subject,
      skip: (data) => deleted(data) || r.skip?.(data) === true,
      deliver: (m) => (deleted(m.data) ? Promise.resolve() : r.deliver(m)),
    }));
  }
}
