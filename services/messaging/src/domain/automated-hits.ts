import { createHash } from 'node:crypto';
import type { RecentMarks } from '@svc/lib/recent-marks';

/**
 * User-agent substrings (case-insensitive) of programs that fetch the links and pixels of mail without a person:
 * security scanners and link checkers of mail systems, link-preview bots, crawlers, headless browsers and HTTP
 * libraries. Kept short on purpose: a real mail client or browser must never match (automated-hits.test.ts holds
 * real ones, mail providers' image proxies among them: GoogleImageProxy and YahooMailProxy fetch the pixel when a
 * person opens the mail, and count). Scanners that send a browser's user agent are left to the burst rule.
 */
export const AUTOMATED_USER_AGENTS = [
  // Bots, crawlers and link previews in general (Googlebot, bingbot, Slackbot, Discordbot, TelegramBot, AdsBot ...).
  'bot',
  'crawler',
  'spider',
  'slurp',
  'bingpreview',
  'facebookexternalhit',
  'skypeuripreview',
  'google-safety',
  'google-inspectiontool',
  // Headless browsers and HTTP libraries: what scanners detonate links with.
  'headlesschrome',
  'phantomjs',
  'python-requests',
  'python-urllib',
  'aiohttp',
  'go-http-client',
  'java/',
  'libwww-perl',
  'curl/',
  'wget/',
  'scrapy',
  'node-fetch',
  'axios/',
  // Mail security vendors' link checkers.
  'barracuda',
  'mimecast',
  'proofpoint',
  'safelinks',
  'urldefense',
  'forcepoint',
  'checkpoint',
  'cisco-ironport',
  'virustotal',
  'urlscan',
  'linkcheck',
  'link checker',
] as const;

/** Words that contain a listed substring and name no program (a phone brand: "CUBOT P30" holds "bot"). */
const NOT_AUTOMATED = ['cubot'] as const;

/** True for a user agent of AUTOMATED_USER_AGENTS; an empty one is not judged (a person's client may send none). */
export function isAutomatedUserAgent(userAgent: string | undefined): boolean {
  if (!userAgent) return false;
  let ua = userAgent.toLowerCase();
  for (const word of NOT_AUTOMATED) ua = ua.replaceAll(word, ' ');
  return AUTOMATED_USER_AGENTS.some((s) => ua.includes(s));
}

/**
 * A client that follows a different link of the same email within this time of its previous hit of that email is
 * a program following every link (a person does not click two links of one mail within two seconds; a scanner
 * clicks them all at once). Each hit restarts the time, so a scanner going through the links at any faster pace
 * stays inside the burst.
 */
export const BURST_MS = 2000;

export type AutomatedReason = 'user_agent' | 'burst';

const urlKey = (url: string) => createHash('sha256').update(url).digest('base64url').slice(0, 22);

/**
 * Which open and click hits are automated (README "Tracking", automated hits): answered like any other, recorded
 * nowhere. Off (TRACKING_DETECT_AUTOMATED=false): nothing is. The first hit of a burst cannot be told from a
 * person's click when it comes, so it is recorded; the ones after it are not.
 */
export class AutomatedHits {
  constructor(
    private readonly marks: RecentMarks,
    private readonly enabled: boolean,
  ) {}

  open(client: { userAgent?: string }): AutomatedReason | undefined {
    return this.enabled && isAutomatedUserAgent(client.userAgent) ? 'user_agent' : undefined;
  }

  /** A click without a client address is judged by its user agent alone. Same link again: a repeat, no burst. */
  async click(
    emailId: string,
    url: string,
    client: { userAgent?: string; ip?: string },
  ): Promise<AutomatedReason | undefined> {
    if (!this.enabled) return undefined;
    if (isAutomatedUserAgent(client.userAgent)) return 'user_agent';
    if (!client.ip) return undefined;
    const link = urlKey(url);
    const previous = await this.marks.swap(`b:${emailId}:${client.ip}`, link, BURST_MS);
    return previous !== undefined && previous !== link ? 'burst' : undefined;
  }
}
