import { AppError } from '@svc/lib/errors';

export interface ActiveSuspension {
  id: string;
  metric: string;
  rate: number;
  threshold: number;
  reason: string;
  suspendedAt: Date;
}

export interface SuspensionState {
  active: ActiveSuspension | null;
  /** When the owner last reinstated the project: mail before it is no longer judged. */
  lastLiftedAt: Date | null;
  /** No project has the id any more: its tracked links stop redirecting (tracking.ts). */
  deleted: boolean;
}

export interface Verdict {
  metric: 'bounce_rate' | 'complaint_rate';
  rate: number;
  threshold: number;
  sent: number;
  reason: string;
}

/** Identity, which owns projects and their suspensions (identity-rpc.ts). */
export interface SuspensionAuthority {
  state(projectId: string): Promise<SuspensionState>;
  suspend(projectId: string, verdict: Verdict): Promise<void>;
}

export function suspendedError(s: ActiveSuspension): AppError {
  return new AppError({
    code: 'PROJECT_SUSPENDED',
    status: 403,
    message: `Sending is suspended for this project: ${s.reason}`,
    details: {
      reason: s.reason,
      metric: s.metric,
      rate: s.rate,
      threshold: s.threshold,
      suspendedAt: s.suspendedAt.toISOString(),
    },
    suggestion: 'See GET /projects/{id}/security; the project owner can reinstate sending once the list is cleaned',
  });
}

/**
 * The send path's view of a project's suspension (and the tracked links' view of it, and of its deletion): asked of
 * identity at most once per `ttlSeconds` per project, dropped at once when identity.project.suspended / .reinstated /
 * .deleted is heard (Bus.watch), so the check costs a map lookup on the hot path.
 */
export class SendingSuspensions {
  private readonly cache = new Map<string, { state: SuspensionState; expiresAt: number }>();
  /** Questions to identity in flight: the sends that miss the cache together (a SendEmails call) share one. */
  private readonly asking = new Map<string, Promise<SuspensionState>>();

  constructor(
    private readonly authority: SuspensionAuthority,
    private readonly ttlSeconds: number,
  ) {}

  async state(projectId: string): Promise<SuspensionState> {
    const hit = this.cache.get(projectId);
    if (hit && hit.expiresAt > Date.now()) return hit.state;
    let asked = this.asking.get(projectId);
    if (!asked) {
      asked = this.authority.state(projectId).finally(() => {
        if (this.asking.get(projectId) === asked) this.asking.delete(projectId);
      });
      this.asking.set(projectId, asked);
    }
    const state = await asked;
    if (this.ttlSeconds > 0) {
      if (this.cache.size >= 10_000) this.cache.clear();
      this.cache.set(projectId, { state, expiresAt: Date.now() + this.ttlSeconds * 1000 });
    }
    return state;
  }

  /** Throws 403 PROJECT_SUSPENDED while the project is suspended. */
  async check(projectId: string): Promise<void> {
    const { active } = await this.state(projectId);
    if (active) throw suspendedError(active);
  }

  forget(projectId: string): void {
    this.cache.delete(projectId);
    // An answer asked for before the change serves only those who asked.
    this.asking.delete(projectId);
  }
}
