import type { TopicRoute } from '@svc/lib/bus-topic';
import { on } from '@svc/lib/bus-topic';
import { isUuid } from '@svc/lib/ids';
import { emailLifecycleTopic } from '@svc/proto/topics/messaging';
import type { ReputationStore, VolumeCounts } from '../store/reputation-store.js';
import type { SendingSuspensions, SuspensionAuthority, Verdict } from './sending-suspension.js';

/**
 * What large mailbox providers tolerate: a spam-complaint rate under 0.3 % and a bounce rate under
 * 5 %. Reaching either suspends sending.
 */
export const THRESHOLDS = { bounceRate: 0.05, complaintRate: 0.003 } as const;
/** The windows shown; suspension judges the first. */
export const WINDOW_DAYS = [7, 30] as const;
const DAY_MS = 86_400_000;

export interface RateWindow extends VolumeCounts {
  days: number;
  bounceRate: number;
  complaintRate: number;
}

export const rates = (days: number, c: VolumeCounts): RateWindow => ({
  days,
  ...c,
  bounceRate: c.sent ? c.bounced / c.sent : 0,
  complaintRate: c.sent ? c.complained / c.sent : 0,
});

/** Null while the volume is below `minVolume` or both rates are under their thresholds; complaints first. */
export function judge(c: VolumeCounts, minVolume: number): Verdict | null {
  if (c.sent < minVolume) return null;
  const w = rates(WINDOW_DAYS[0], c);
  const pct = (r: number) => `${(r * 100).toFixed(2)} %`;
  const over = (what: string, rate: number, limit: number) =>
    `${what} rate ${pct(rate)} of ${c.sent} emails reached the ${pct(limit)} limit`;
  if (w.complaintRate >= THRESHOLDS.complaintRate) {
    return {
      metric: 'complaint_rate',
      rate: w.complaintRate,
      threshold: THRESHOLDS.complaintRate,
      sent: c.sent,
      reason: over('complaint', w.complaintRate, THRESHOLDS.complaintRate),
    };
  }
  if (w.bounceRate >= THRESHOLDS.bounceRate) {
    return {
      metric: 'bounce_rate',
      rate: w.bounceRate,
      threshold: THRESHOLDS.bounceRate,
      sent: c.sent,
      reason: over('bounce', w.bounceRate, THRESHOLDS.bounceRate),
    };
  }
  return null;
}

/**
 * A project's bounce and complaint rates, from its own email rows, and the automatic suspension: each
 * bounce or complaint (emails.bounce / emails.complaint on the bus) judges the project's last 7 days, only
 * mail sent after the owner's last reinstatement counting, and asks identity to suspend when a rate reaches
 * its threshold over at least `minVolume` emails.
 */
export class Reputation {
  constructor(
    private readonly store: ReputationStore,
    private readonly suspensions: SendingSuspensions,
    private readonly authority: SuspensionAuthority,
    readonly minVolume: number,
  ) {}

  async windows(projectId: string): Promise<RateWindow[]> {
    const now = Date.now();
    return Promise.all(
      WINDOW_DAYS.map(async (days) => rates(days, await this.store.counts(projectId, new Date(now - days * DAY_MS)))),
    );
  }

  async judgeProject(projectId: string): Promise<Verdict | null> {
    const state = await this.suspensions.state(projectId);
    if (state.active) return null;
    const windowStart = Date.now() - WINDOW_DAYS[0] * DAY_MS;
    const since = new Date(Math.max(windowStart, state.lastLiftedAt?.getTime() ?? 0));
    const verdict = judge(await this.store.counts(projectId, since), this.minVolume);
    if (!verdict) return null;
    await this.authority.suspend(projectId, verdict);
    this.suspensions.forget(projectId);
    return verdict;
  }

  /** Only `emails.bounce` and `emails.complaint`: the bus does not deliver every sent email here to be ignored. */
  routes(): TopicRoute[] {
    return ['bounce', 'complaint'].map((type) =>
      on(emailLifecycleTopic(type), async (m) => {
        if (m.test || !isUuid(m.projectId) || m.type !== type) return;
        await this.judgeProject(m.projectId);
      }),
    );
  }
}
