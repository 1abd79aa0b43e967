import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

// WEBHOOK steps: a signed JSON POST with retries. The receiver checks
// X-Webhook-Signature = "v1=" + hex(HMAC-SHA256(project secret, `${X-Webhook-Timestamp}.${raw body}`)).

export function signature(secret: string, timestamp: string, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

/** Loopback, private, link-local, CGNAT, multicast and reserved addresses (IPv4-mapped IPv6 too). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1], 'ipv4');
  const family = isIP(address);
  if (!family) return true;
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class WebhookRefused extends Error {}

/** Refuses a URL whose host resolves (every address, not just as written) to a private address. */
export async function assertPublicUrl(url: string, resolve = lookup): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await resolve(host, { all: true })).map((a) => a.address);
  const bad = addresses.find(isPrivateAddress);
  if (bad) throw new WebhookRefused(`webhook host ${host} resolves to a private address (${bad}); refused`);
}

export interface WebhookRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  payload: unknown;
  deliveryId: string;
  secret: string;
}
export interface WebhookOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
}
export interface WebhookResult {
  ok: boolean;
  status?: number;
  attempts: number;
  error?: string;
  response?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Calls the receiver until a 2xx or the attempts run out (backoff doubles from retryBaseMs). */
export async function deliverWebhook(req: WebhookRequest, opts: WebhookOptions): Promise<WebhookResult> {
  if (!opts.allowPrivate) {
    try {
      await assertPublicUrl(req.url);
    } catch (err) {
      return { ok: false, attempts: 0, error: err instanceof Error ? err.message : String(err) };
    }
  }
  const body = JSON.stringify(req.payload);
  let last: WebhookResult = { ok: false, attempts: 0 };
  for (let attempt = 1; attempt <= opts.maxAttempts; attempt++) {
    if (attempt > 1) await sleep(opts.retryBaseMs * 2 ** (attempt - 2));
    const timestamp = String(Math.floor(Date.now() / 1000));
    try {
      const res = await fetch(req.url, {
        method: req.method,
        redirect: 'manual',
        signal: AbortSignal.timeout(opts.timeoutMs),
        headers: {
          ...req.headers,
          'content-type': 'application/json',
          'user-agent': 'svc-workflows-webhook/1',
          'x-webhook-id': req.deliveryId,
          'x-webhook-timestamp': timestamp,
          'x-webhook-signature': signature(req.secret, timestamp, body),
        },
        body,
      });
      const text = (await res.text()).slice(0, 1000);
      last = { ok: res.ok, status: res.status, attempts: attempt, response: text };
      if (res.ok) return last;
      last.error = `receiver answered ${res.status}`;
    } catch (err) {
      last = { ok: false, attempts: attempt, error: err instanceof Error ? err.message : String(err) };
    }
  }
  return last;
}
