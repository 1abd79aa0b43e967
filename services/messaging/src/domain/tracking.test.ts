import type { Pool } from '@svc/lib/db';
import { MemoryRateLimiter } from '@svc/lib/rate-limit';
import type { EmailsStore } from '../store/emails-store.js';
import type { AutomatedHits } from './automated-hits.js';
import type { ContactDirectory } from './contact-directory.js';
import { BlockedDomains } from './link-safety.js';
import type { SuspensionState } from './sending-suspension.js';
import { STANDING_WAIT_MS, standingWaitMs, Tracking, type ProjectStanding } from './tracking.js';
import { TrackingHits } from './tracking-hits.js';
import { TrackingTokens } from './tracking-tokens.js';

const tokens = new TrackingTokens('secret-a');
const P = '00000000-0000-4000-8000-000000000001';
const E = '00000000-0000-4000-8000-00000000000e';
const active = { active: null, deleted: false };
const suspended = { active: { id: 's' } as SuspensionState['active'], deleted: false };

/** Tracking with only what a check-only click of a link touches: the token, the project's standing, the email row. */
function tracking(standing: ProjectStanding['state'], emailProject: () => Promise<string | null> = async () => P) {
  const emails = { projectOf: emailProject } as unknown as EmailsStore;
  return new Tracking({} as Pool, emails, tokens, {} as ContactDirectory, {} as TrackingHits, {} as AutomatedHits, {
    standing: { state: standing },
    blocked: new BlockedDomains(['blocked.example']),
  });
}

const click = (t: Tracking, payload: { url: string; projectId?: string }) =>
  t.click(tokens.sign('click', { emailId: E, ...payload }), {}, true);

describe('tracked links that do not redirect', () => {
  test("a suspended or deleted project's link is refused; an older token's project is its email's", async () => {
    const url = 'https://example.com/x';
    expect(
      await click(
        tracking(async () => active),
        { url, projectId: P },
      ),
    ).toEqual({ url });
    expect(
      await click(
        tracking(async () => suspended),
        { url, projectId: P },
      ),
    ).toEqual({
      url,
      refused: 'project_suspended',
    });
    const deleted = tracking(async () => ({ active: null, deleted: true }));
    expect(await click(deleted, { url, projectId: P })).toEqual({ url, refused: 'project_deleted' });
    expect(await click(deleted, { url })).toEqual({ url, refused: 'project_deleted' });
    // An older token whose email row is gone: its project is unknown, only the URL is judged.
    expect(
      await click(
        tracking(
          async () => suspended,
          async () => null,
        ),
        { url },
      ),
    ).toEqual({ url });
  });

  test('fail-open: when the standing or the email row cannot be read, the link redirects', async () => {
    const down = async () => {
      throw new Error('identity unavailable');
    };
    const url = 'https://example.com/x';
    expect(await click(tracking(down), { url, projectId: P })).toEqual({ url });
    expect(
      await click(
        tracking(async () => suspended, down),
        { url },
      ),
    ).toEqual({ url });
  });

  test('a blocked domain or a URL that is no plain web address is refused whatever the project', async () => {
    const t = tracking(async () => active);
    expect((await click(t, { url: 'https://a.blocked.example/', projectId: P })).refused).toBe('blocked_domain');
    for (const url of ['javascript:alert(1)', 'data:text/html,x', 'https://u:p@example.com/']) {
      expect((await click(t, { url, projectId: P })).refused).toBe('unsafe_url');
    }
  });
});

describe('a click waits for nothing it does not need', () => {
  test('the wait for the standing ends within the RPC deadline the gateway also has: half of it when shorter', () => {
    expect(standingWaitMs(30_000)).toBe(STANDING_WAIT_MS);
    expect(standingWaitMs(4000)).toBe(2000);
    expect(standingWaitMs(1000)).toBe(500);
  });

  test("a hung identity does not hold the link: it redirects without the project's standing (fail-open)", async () => {
    // Never answers: the RPC's deadline is the gateway's too, so waiting for it would answer the person 503.
    const hung = () => new Promise<never>(() => undefined);
    const url = 'https://example.com/x';
    expect(await click(tracking(hung), { url, projectId: P })).toEqual({ url });
    expect(
      await click(
        tracking(async () => active, hung),
        { url },
      ),
    ).toEqual({ url });
  });

  test('an aged link is decided from its token: no burst mark is asked of Redis, nothing is recorded', async () => {
    const asked: string[] = [];
    // A burst for every click it is asked about: a young click stops there, before any database write.
    const automated = {
      async click(_emailId: string, url: string) {
        asked.push(url);
        return 'burst' as const;
      },
    } as unknown as AutomatedHits;
    const policy = { recordForMs: 86_400_000, openWindowMs: 0, clickWindowMs: 0, perClientPerMinute: 0 };
    const t = new Tracking(
      {} as Pool,
      {} as EmailsStore,
      tokens,
      {} as ContactDirectory,
      new TrackingHits(new MemoryRateLimiter(), policy),
      automated,
      { standing: { state: async () => active }, blocked: new BlockedDomains([]) },
    );
    const now = Math.floor(Date.now() / 1000);
    const hit = (url: string, iat: number) =>
      t.click(tokens.sign('click', { emailId: E, projectId: P, url, iat }), { ip: '192.0.2.1' });
    expect(await hit('https://example.com/old', now - 2 * 86_400)).toEqual({ url: 'https://example.com/old' });
    expect(await hit('https://example.com/young', now)).toEqual({ url: 'https://example.com/young' });
    expect(asked).toEqual(['https://example.com/young']);
  });
});
