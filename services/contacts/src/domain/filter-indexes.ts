import { createHash } from 'node:crypto';
import type { Pool } from '@svc/lib/db';
import { logPassFailure } from '@svc/lib/dependency-errors';
import type { Logger } from '@svc/lib/logger';
import {
  MANAGED_INDEX_PREFIX,
  openFilterIndexSession,
  textArrayLiteral,
  textLiteral,
  validManagedIndexes,
} from '../store/filter-indexes-store.js';
import { INDEX_EXPRESSIONS, indexUses, type IndexedPaths, type IndexKind } from './filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';

/**
 * Paths that saved segments compare get an index (README "Filter indexes"): by range, by date window, by string
 * equality. Without one, a selective range filter over a big project reads every row of a GIN match or of the newest
 * contacts, and a count reads every heap page; each index costs PostgreSQL CPU on every contact write
 * (bench/README.md, issue 12), so only the paths saved segments use, most-used first, up to a cap.
 */
export interface WantedIndex {
  name: string;
  kind: IndexKind;
  path: string[];
  /** Saved segment definitions that compare the path so. */
  uses: number;
  /** The index's key expression: INDEX_EXPRESSIONS over the path as constants. */
  expression: string;
}

/**
 * Deterministic per path and kind, so every replica (and a retry) names the same index. The shape of the index
 * (filter-indexes-store.ts `create`) and the SQL of its kind's expression are part of the hash: a new shape or a
 * changed expression gets new names, and the first pass drops the old indexes as unwanted and builds the new ones
 * (an index keeping its name would stay, and the compiler's new expression would not match it).
 */
const INDEX_SHAPE = 'expression';

const KIND_TAGS: Record<IndexKind, string> = { number: 'num', instant: 'inst', text: 'eq' };

/** The literal of a constant in index DDL (INDEX_EXPRESSIONS' `bind`). */
const literal = (value: string | string[]) => (Array.isArray(value) ? textArrayLiteral(value) : textLiteral(value));

/** Each kind's expression SQL over a placeholder path: what a definition change changes. */
const EXPRESSION_SQL = Object.fromEntries(
  Object.entries(INDEX_EXPRESSIONS).map(([kind, expression]) => [kind, expression('data', ['path'], literal)]),
) as Record<IndexKind, string>;

export function indexName(kind: IndexKind, path: string[]): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([INDEX_SHAPE, kind, EXPRESSION_SQL[kind], path]))
    .digest('hex')
    .slice(0, 20);
  return `${MANAGED_INDEX_PREFIX}${KIND_TAGS[kind]}_${hash}`;
}

/** The indexes saved conditions call for: most-used first (ties by name), at most `max`. */
export function wantedIndexes(conditions: unknown[], max: number): WantedIndex[] {
  const byName = new Map<string, WantedIndex>();
  for (const condition of conditions) {
    let uses: ReturnType<typeof indexUses>;
    try {
      uses = indexUses(parseFilterTree(condition, 'condition'));
    } catch {
      continue; // stored before a rule tightened: evaluating it fails the same way, an index would not help
    }
    const seen = new Set<string>();
    for (const { kind, path } of uses) {
      const name = indexName(kind, path);
      if (seen.has(name)) continue;
      seen.add(name);
      const wanted = byName.get(name);
      if (wanted) wanted.uses += 1;
      else
        byName.set(name, {
          name,
          kind,
          path,
          uses: 1,
          expression: INDEX_EXPRESSIONS[kind]('data', path, literal),
        });
    }
  }
  return [...byName.values()].sort((a, b) => b.uses - a.uses || (a.name < b.name ? -1 : 1)).slice(0, Math.max(0, max));
}

/**
 * Makes the managed indexes match the saved conditions: drops the invalid ones and those no longer wanted, then
 * builds the missing ones, each CONCURRENTLY (writes go on). Returns false when another replica holds the lock.
 * A failed build is dropped at once (it would stay invalid and block `IF NOT EXISTS`) and the pass fails: retried.
 */
export async function reconcileFilterIndexes(
  pool: Pool,
  max: number,
  logger?: Logger,
  signal?: AbortSignal,
  catalog?: FilterIndexCatalog,
): Promise<boolean> {
  const session = await openFilterIndexSession(pool);
  if (!session) return false;
  // Stopping ends the session at once: a build in flight is left to PostgreSQL (invalid, dropped by the next pass).
  const abort = () => session.close();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    const wanted = wantedIndexes(await session.conditions(), max);
    const names = new Set(wanted.map((w) => w.name));
    const managed = await session.managed();
    for (const index of managed) {
      if (index.valid && names.has(index.name)) continue;
      await session.drop(index.name);
      logger?.info({ index: index.name, valid: index.valid }, 'filter index dropped');
    }
    const present = new Set(managed.filter((i) => i.valid).map((i) => i.name));
    let failure: unknown;
    let built = 0;
    for (const w of wanted) {
      if (present.has(w.name)) continue;
      const started = performance.now();
      try {
        await session.create(w.name, w.expression);
      } catch (err) {
        failure ??= err;
        await session.drop(w.name).catch(() => undefined);
        continue;
      }
      built += 1;
      const ms = Math.round(performance.now() - started);
      logger?.info({ index: w.name, path: w.path.join('.'), kind: w.kind, uses: w.uses, ms }, 'filter index built');
    }
    if (built) await session.analyze();
    if (built || managed.length) catalog?.invalidate();
    if (failure) throw failure;
    return true;
  } finally {
    signal?.removeEventListener('abort', abort);
    session.close();
  }
}

/**
 * The valid managed indexes, as the filter compiler asks for them (SqlParams `indexed`). Read from the catalog at
 * most every `ttlMs` (another replica builds and drops them too) and at once after this replica's pass changed
 * them. A stale answer only costs speed: the compiled forms match the same contacts with or without their index.
 */
export class FilterIndexCatalog {
  private names: ReadonlySet<string> = new Set();
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading?: Promise<void>;

  constructor(
    private readonly pool: Pool,
    private readonly ttlMs = 10_000,
  ) {}

  async indexed(): Promise<IndexedPaths> {
    if (performance.now() - this.loadedAt > this.ttlMs) {
      this.loading ??= this.load().finally(() => {
        this.loading = undefined;
      });
      await this.loading;
    }
    const names = this.names;
    return (kind, path) => names.has(indexName(kind, path));
  }

  invalidate(): void {
    this.loadedAt = Number.NEGATIVE_INFINITY;
  }

  private async load(): Promise<void> {
    try {
      this.names = new Set(await validManagedIndexes(this.pool));
    } catch {
      // PostgreSQL unreachable: the query that follows fails on its own; keep the last answer.
    }
    this.loadedAt = performance.now();
  }
}

/**
 * Runs reconciliations in the background, one at a time: `kick` after a definition changes (never awaited by the
 * RPC), and again every `retryMs` while a pass failed (PostgreSQL down) or another replica held the lock.
 */
export class FilterIndexLoop {
  private dirty = true;
  private running?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly pass: (signal: AbortSignal) => Promise<boolean>,
    private readonly logger: Logger,
    private readonly retryMs = 10_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.dirty) this.kick();
    }, this.retryMs);
    this.timer.unref();
    this.kick();
  }

  kick(): void {
    this.dirty = true;
    if (this.running || this.stopped) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when no pass runs and none is wanted (tests, the bench). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.abort.abort();
  }

  private async drain(): Promise<void> {
    while (this.dirty && !this.stopped) {
      this.dirty = false;
      try {
        if (!(await this.pass(this.abort.signal))) {
          this.dirty = true; // another replica reconciles; look again later, it may have started before the change
          return;
        }
      } catch (err) {
        this.dirty = true;
        logPassFailure(this.logger, err, { part: 'filter-indexes' }, 'filter index reconciliation failed; will retry');
        return;
      }
    }
  }
}
