import { MemoryRecentMarks } from '@svc/lib/recent-marks';
import { AutomatedHits, isAutomatedUserAgent } from './automated-hits.js';

/** User agents of people's mail clients, browsers and mail providers' image proxies (fetching for a person). */
const PEOPLE = [
  // Gmail fetches images, the pixel among them, through its proxy when a person opens the mail.
  'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)',
  'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html',
  'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17029; Pro)',
  'Mozilla/4.0 (compatible; ms-office; MSOffice 16)',
  'Outlook-iOS/723.4027091.prod.iphone (4.2347.0)',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:115.0) Gecko/20100101 Thunderbird/115.5.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 ' +
    'Edg/131.0.0.0',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 ' +
    'Mobile/15E148 Safari/604.1',
  // The Gmail app on iOS and Android opens links in its in-app browser.
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) GSA/330.0 ' +
    'Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240805.005; wv) AppleWebKit/537.36 (KHTML, like Gecko) ' +
    'Version/4.0 Chrome/128.0.6613.127 Mobile Safari/537.36',
  'Mozilla/5.0 (Linux; Android 13; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 ' +
    'Chrome/115.0.0.0 Mobile Safari/537.36',
  // A phone whose brand holds "bot".
  'Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36',
];

/** Scanners, link checkers, bots and crawlers. */
const PROGRAMS = [
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
  'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36',
  'Barracuda Sentinel (EE)',
  'python-requests/2.31.0',
  'Go-http-client/1.1',
  'curl/8.5.0',
  'Java/1.8.0_292',
  'Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)',
  'Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)',
  'Mozilla/5.0 (compatible; archive.org_crawler)',
];

describe('automated user agents', () => {
  test.each(PEOPLE)('a mail client, browser or image proxy counts: %s', (ua) => {
    expect(isAutomatedUserAgent(ua)).toBe(false);
  });

  test.each(PROGRAMS)('a scanner, bot or crawler is automated: %s', (ua) => {
    expect(isAutomatedUserAgent(ua)).toBe(true);
  });

  test('an empty or missing user agent is not judged', () => {
    expect(isAutomatedUserAgent('')).toBe(false);
    expect(isAutomatedUserAgent(undefined)).toBe(false);
  });
});

const CHROME = PEOPLE[7];
const hits = (enabled = true) => new AutomatedHits(new MemoryRecentMarks(), enabled);

describe('automated hits', () => {
  test("a scanner's open and click are automated by their user agent; a person's are not", async () => {
    const h = hits();
    expect(h.open({ userAgent: PROGRAMS[0] })).toBe('user_agent');
    expect(h.open({ userAgent: PEOPLE[0] })).toBeUndefined();
    expect(await h.click('e', 'https://a.example/', { userAgent: 'curl/8.5.0', ip: '1.2.3.4' })).toBe('user_agent');
    expect(await h.click('e', 'https://a.example/', { userAgent: CHROME, ip: '1.2.3.4' })).toBeUndefined();
  });

  test('different links of one email from one client within seconds: each after the first is a burst', async () => {
    const h = hits();
    const from = (ip: string) => ({ userAgent: CHROME, ip });
    expect(await h.click('e', 'https://a.example/', from('1.2.3.4'))).toBeUndefined();
    expect(await h.click('e', 'https://b.example/', from('1.2.3.4'))).toBe('burst');
    expect(await h.click('e', 'https://c.example/', from('1.2.3.4'))).toBe('burst');
    // The same link again is a repeat (left to the repeat window), not a burst.
    expect(await h.click('e', 'https://c.example/', from('1.2.3.4'))).toBeUndefined();
    // Another client, another email: their own first click.
    expect(await h.click('e', 'https://b.example/', from('5.6.7.8'))).toBeUndefined();
    expect(await h.click('e2', 'https://b.example/', from('1.2.3.4'))).toBeUndefined();
    // No client address: judged by the user agent alone.
    expect(await h.click('e3', 'https://a.example/', { userAgent: CHROME })).toBeUndefined();
    expect(await h.click('e3', 'https://b.example/', { userAgent: CHROME })).toBeUndefined();
  });

  test('off (TRACKING_DETECT_AUTOMATED=false): nothing is automated', async () => {
    const h = hits(false);
    expect(h.open({ userAgent: PROGRAMS[0] })).toBeUndefined();
    expect(await h.click('e', 'https://a.example/', { userAgent: PROGRAMS[0], ip: '1.2.3.4' })).toBeUndefined();
    expect(await h.click('e', 'https://b.example/', { userAgent: CHROME, ip: '1.2.3.4' })).toBeUndefined();
  });
});
