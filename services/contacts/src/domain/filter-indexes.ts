import { createHash } from 'node:crypto';
import type { Pool } from '@svc/lib/db';
import { logPassFailure } from '@svc/lib/dependency-errors';
import type { Logger } from '@svc/lib/logger';
import { MANAGED_INDEX_PREFIX, openFilterIndexSession, textArrayLiteral } from '../store/filter-indexes-store.js';
import { RANGE_EXPRESSIONS, rangeUses, type RangeKind } from './filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';

/**
 * Paths that saved segments compare by range get an index (README "Filter indexes"). Without one, a selective range
 * filter over a big project reads every row of a GIN match or of the newest contacts; each index costs about
 * +15-20% of PostgreSQL CPU per contact write (bench/README.md, issue 12), so only the paths saved segments use,
 * most-used first, up to a cap.
 */
export interface WantedIndex {
  name: string;
  kind: RangeKind;
  path: string[];
  /** Saved segment definitions that compare the path so. */
  uses: number;
  /** The index's key expression: RANGE_EXPRESSIONS over the path as a constant. */
  expression: string;
}

/**
 * Deterministic per path and kind, so every replica (and a retry) names the same index. The shape of the index
 * (filter-indexes-store.ts `create`) is part of the hash: a new shape gets new names, and the first pass drops
 * the old ones as unwanted.
 */
const INDEX_SHAPE = 'expression';

export function indexName(kind: RangeKind, path: string[]): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([INDEX_SHAPE, kind, path]))
    .digest('hex')
    .slice(0, 20);
  return `${MANAGED_INDEX_PREFIX}${kind === 'number' ? 'num' : 'date'}_${hash}`;
}

/** The indexes saved conditions call for: most-used first (ties by name), at most `max`. */
export function wantedIndexes(conditions: unknown[], max: number): WantedIndex[] {
  const byName = new Map<string, WantedIndex>();
  for (const condition of conditions) {
    let uses: ReturnType<typeof rangeUses>;
    try {
      uses = rangeUses(parseFilterTree(condition, 'condition'));
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
          expression: RANGE_EXPRESSIONS[kind]('data', textArrayLiteral(path)),
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
    if (failure) throw failure;
    return true;
  } finally {
    signal?.removeEventListener('abort', abort);
    session.close();
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
