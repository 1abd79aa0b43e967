import { availableParallelism } from 'node:os';
import { parseEnv } from '@svc/lib/config';
import { messagingEnv } from './config.js';

describe("the messaging service's own environment variables", () => {
  test('defaults as documented', () => {
    expect(parseEnv(messagingEnv, {})).toEqual({
      smtpUrl: undefined,
      smtpPoolSize: 5,
      dkimWorkers: Math.max(1, availableParallelism()),
      dkimThreadNice: 10,
      embeddedSmtpPort: 2525,
      sendRatePerSecond: 100,
      sendMaxAttempts: 6,
      sendRetryBaseMs: 30000,
      domainCheckIntervalSeconds: 300,
      dnsServers: [],
      inboundSmtpPort: undefined,
      reputationMinVolume: 100,
      s3: undefined,
      suspensionCacheSeconds: 30,
      trackingHits: {
        recordForMs: 365 * 86_400_000,
        openWindowMs: 60_000,
        clickWindowMs: 60_000,
        perClientPerMinute: 0,
      },
      trackingDetectAutomated: true,
      trackingBlockedDomains: [],
    });
  });

  test('TRACKING_DETECT_AUTOMATED=false turns the detection of scanners and bots off; another value is refused', () => {
    expect(parseEnv(messagingEnv, { TRACKING_DETECT_AUTOMATED: 'false' }).trackingDetectAutomated).toBe(false);
    expect(() => parseEnv(messagingEnv, { TRACKING_DETECT_AUTOMATED: 'off' })).toThrow(
      /^invalid environment variable TRACKING_DETECT_AUTOMATED: /,
    );
  });

  test('TRACKING_BLOCKED_DOMAINS is a comma list of domains, spelled as URLs spell hostnames', () => {
    expect(parseEnv(messagingEnv, {}).trackingBlockedDomains).toEqual([]);
    const c = parseEnv(messagingEnv, { TRACKING_BLOCKED_DOMAINS: ' Evil.Example, *.bad.test,.worse.test.,bücher.de,' });
    expect(c.trackingBlockedDomains).toEqual(['evil.example', 'bad.test', 'worse.test', 'xn--bcher-kva.de']);
    expect(() => parseEnv(messagingEnv, { TRACKING_BLOCKED_DOMAINS: 'ok.test, https://x.test/' })).toThrow(
      /^invalid environment variable TRACKING_BLOCKED_DOMAINS: Not a domain: https:\/\/x.test\//,
    );
  });

  test('DNS_SERVERS is a comma-separated list', () => {
    const c = parseEnv(messagingEnv, { DNS_SERVERS: '127.0.0.1:5353, 10.0.0.1' });
    expect(c.dnsServers).toEqual(['127.0.0.1:5353', '10.0.0.1']);
  });

  test('a bad value names the variable in one line', () => {
    expect(() => parseEnv(messagingEnv, { SMTP_POOL_SIZE: 'many' })).toThrow(
      /^invalid environment variable SMTP_POOL_SIZE: /,
    );
    expect(() => parseEnv(messagingEnv, { SMTP_URL: 'relay' })).toThrow(/^invalid environment variable SMTP_URL: /);
    expect(() => parseEnv(messagingEnv, { DKIM_WORKERS: '-1' })).toThrow(
      /^invalid environment variable DKIM_WORKERS: /,
    );
    expect(() => parseEnv(messagingEnv, { DKIM_THREAD_NICE: '20' })).toThrow(
      /^invalid environment variable DKIM_THREAD_NICE: /,
    );
    expect(() => parseEnv(messagingEnv, { DNS_SERVERS: 'a,,b' })).toThrow(
      /^invalid environment variable DNS_SERVERS: /,
    );
  });

  test("the gateway's variables are not messaging's business", () => {
    expect(() => parseEnv(messagingEnv, { TRUST_PROXY: 'yes please', SESSION_SECRET: 'x' })).not.toThrow();
  });
});
