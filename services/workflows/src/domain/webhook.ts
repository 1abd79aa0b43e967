import { createHmac } from 'node:crypto';
import { lookup, Resolver } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';

// WEBHOOK steps: a signed JSON POST with retries. The receiver checks
// X-Webhook-Signature = "v1=" + hex(HMAC-SHA256(project secret, `${X-Webhook-Timestamp}.${raw body}`)).

export function signature(secret: string, timestamp: string, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

const PRIVATE = new BlockList();
const PRIVATE_IPV4 = [
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
] as const;
for (const [net, bits] of PRIVATE_IPV4) {
  PRIVATE.addSubnet(net, bits, 'ipv4');
  // The same networks inside IPv6 addresses that reach IPv4 ones: NAT64 (64:ff9b::/96), 6to4 (2002::/16),
  // IPv4-compatible (::/96) and SIIT (::ffff:0:0/96) addresses, as a name's AAAA record may give them.
  const [a, b, c, d] = net.split('.').map(Number);
  const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  PRIVATE.addSubnet(`64:ff9b::${hex}`, 96 + bits, 'ipv6');
  PRIVATE.addSubnet(`::${hex}`, 96 + bits, 'ipv6');
  PRIVATE.addSubnet(`::ffff:0:${hex}`, 96 + bits, 'ipv6');
  PRIVATE.addSubnet(`2002:${hex}::`, 16 + bits, 'ipv6');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
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

/** A host's addresses (A and AAAA). */
export type HostResolver = (host: string) => Promise<{ address: string; family: number }[]>;

/**
 * The system's resolver (`getaddrinfo`, /etc/hosts included), or the given `host:port` DNS servers
 * (DNS_SERVERS) asked for A and AAAA records.
 */
export function hostResolver(servers: string[] = []): HostResolver {
  if (!servers.length) return (host) => lookup(host, { all: true });
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers(servers);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const out = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (!out.length) {
      const err = v4.status === 'rejected' ? v4.reason : v6.status === 'rejected' ? v6.reason : null;
      throw Object.assign(new Error(`webhook host ${host} did not resolve`), { cause: err });
    }
    return out;
  };
}

/**
 * Resolves the URL's host once and returns the address the request must connect to: the first one,
 * after refusing the host when any of its addresses is private (unless `allowPrivate`). The request
 * then connects to exactly this address (see `send`), so a second lookup cannot point it elsewhere.
 */
export async function pinAddress(
  url: string,
  resolve: HostResolver = hostResolver(),
  allowPrivate = false,
): Promise<{ address: string; family: number }> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  const addresses = family ? [{ address: host, family }] : await resolve(host);
  if (!addresses.length) throw new WebhookRefused(`webhook host ${host} did not resolve`);
  const bad = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
  if (bad) throw new WebhookRefused(`webhook host ${host} resolves to a private address (${bad.address}); refused`);
  return addresses[0];
}

/** Refuses a URL whose host resolves (every address, not just as written) to a private address. */
export async function assertPublicUrl(url: string, resolve: HostResolver = hostResolver()): Promise<void> {
  await pinAddress(url, resolve);
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
  /** Default: the system's resolver. */
  resolve?: HostResolver;
}
export interface WebhookResult {
  ok: boolean;
  status?: number;
  attempts: number;
  error?: string;
  response?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The start of a receiver's answer as the step's output keeps it: PostgreSQL's jsonb takes neither NUL nor
 * half of a surrogate pair (the cut at 1000 characters can split one), so those become U+FFFD.
 */
const storable = (text: string) =>
  text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\ufffd');

/**
 * One HTTP(S) request to the pinned address: the URL keeps its host name (Host header, TLS SNI and
 * certificate check), but the socket connects to `pinned` (the `lookup` of the request answers it
 * and nothing else). Redirects are not followed: a 3xx is an answer like any other non-2xx.
 */
function send(
  url: URL,
  pinned: { address: string; family: number },
  method: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  const pinnedLookup = (_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (opts?.all) cb(null, [pinned]);
    else cb(null, pinned.address, pinned.family);
  };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      {
        method,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: pinnedLookup as never,
        agent: false,
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        let text = '';
        const answer = () => resolve({ status: res.statusCode ?? 0, text: storable(text.slice(0, 1000)) });
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          // The rest of a long (or endless) answer is not read: its start is all the step keeps.
          if (text.length >= 1000) {
            answer();
            res.destroy();
          }
        });
        res.on('end', answer);
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Calls the receiver until a 2xx or the attempts run out (backoff doubles from retryBaseMs). The host
 * is resolved and checked once; every attempt connects to the address that was checked.
 */
export async function deliverWebhook(req: WebhookRequest, opts: WebhookOptions): Promise<WebhookResult> {
  let pinned: { address: string; family: number };
  let url: URL;
  try {
    url = new URL(req.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WebhookRefused('webhook URL must be http(s)');
    pinned = await pinAddress(req.url, opts.resolve, opts.allowPrivate);
  } catch (err) {
    return { ok: false, attempts: 0, error: err instanceof Error ? err.message : String(err) };
  }
  const body = JSON.stringify(req.payload);
  let last: WebhookResult = { ok: false, attempts: 0 };
  for (let attempt = 1; attempt <= opts.maxAttempts; attempt++) {
    if (attempt > 1) await sleep(opts.retryBaseMs * 2 ** (attempt - 2));
    const timestamp = String(Math.floor(Date.now() / 1000));
    try {
      const headers = {
        ...req.headers,
        'content-type': 'application/json',
        'user-agent': 'svc-workflows-webhook/1',
        'x-webhook-id': req.deliveryId,
        'x-webhook-timestamp': timestamp,
        'x-webhook-signature': signature(req.secret, timestamp, body),
      };
      const res = await send(url, pinned, req.method, headers, body, opts.timeoutMs);
      const ok = res.status >= 200 && res.status < 300;
      last = { ok, status: res.status, attempts: attempt, response: res.text };
      if (ok) return last;
      last.error = `receiver answered ${res.status}`;
    } catch (err) {
      last = { ok: false, attempts: attempt, error: err instanceof Error ? err.message : String(err) };
    }
  }
  return last;
}
