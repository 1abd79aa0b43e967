import { simpleParser, type ParsedMail } from 'mailparser';
import pg from 'pg';
import { TrackingTokens } from '../../services/messaging/src/domain/tracking-tokens.js';
import { call, eventually, platform, signUp, type Tenant } from './client.js';

// Client-side helpers of the messaging tests: the test SMTP sink and DNS server are reached
// through their control ports (platform.json), like a person reading a mailbox or editing a zone.

interface PlatformMessaging {
  smtp: { url: string; controlUrl: string };
  dns: { address: string; controlUrl: string };
}

const infra = platform as unknown as PlatformMessaging;

export interface ReceivedMail {
  parsed: ParsedMail;
  raw: Buffer;
  envelopeFrom: string;
}

export async function receivedMail(to: string): Promise<ReceivedMail[]> {
  const res = await fetch(`${infra.smtp.controlUrl}/messages?to=${encodeURIComponent(to)}`);
  const list = (await res.json()) as { from: string; raw: string }[];
  return Promise.all(
    list.map(async (m) => {
      const raw = Buffer.from(m.raw, 'base64');
      return { parsed: await simpleParser(raw), raw, envelopeFrom: m.from };
    }),
  );
}

/** Waits until `count` messages reached `to`. */
export async function waitForMail(to: string, count = 1, timeoutMs = 15_000): Promise<ReceivedMail[]> {
  return eventually(
    async () => {
      const mail = await receivedMail(to);
      return mail.length >= count ? mail : undefined;
    },
    timeoutMs,
    `${count} message(s) to ${to}`,
  );
}

/** Verifies a signed-up account's address the way a person does it: the mailed link's token. */
export async function verifyAddress(user: { cookie: string; email: string }): Promise<void> {
  const sent = await call('POST', '/auth/request-verification', undefined, { cookie: user.cookie });
  if (sent.status !== 200) throw new Error(`request-verification answered ${sent.status}`);
  const [mail] = await waitForMail(user.email);
  const token = /\/app\/verify\?token=([A-Za-z0-9_-]+)/.exec(mail.parsed.text ?? '')?.[1];
  const verified = await call('POST', '/auth/verify-email', { token });
  if (verified.status !== 200) throw new Error(`verify-email answered ${verified.status}`);
}

/** A new account with its address verified (only such an account accepts invitations). */
export async function signUpVerified(): Promise<Awaited<ReturnType<typeof signUp>>> {
  const user = await signUp();
  await verifyAddress(user);
  return user;
}

/** How many RCPT TO commands named `to` (each delivery attempt is one). */
export async function smtpAttempts(to: string): Promise<number> {
  const res = await fetch(`${infra.smtp.controlUrl}/attempts?to=${encodeURIComponent(to)}`);
  return ((await res.json()) as { attempts: number }).attempts;
}

export async function publishDns(name: string, type: string, value: unknown): Promise<void> {
  const res = await fetch(`${infra.dns.controlUrl}/records`, {
    method: 'POST',
    body: JSON.stringify({ name, type, value }),
  });
  if (!res.ok) throw new Error(`DNS control answered ${res.status}`);
}

export const dnsServers = () => infra.dns.address;

let domainCounter = 0;
export const uniqueDomain = (tag = 'mail') =>
  `${tag}${Date.now().toString(36)}${++domainCounter}${Math.floor(Math.random() * 1e4)}.test`;

/** Adds a domain, publishes every record it asks for and verifies it: ready to send from. */
export async function verifiedDomain(
  t: Tenant,
  domain = uniqueDomain(),
): Promise<{ id: string; domain: string; records: { type: string; name: string; value: string }[] }> {
  const created = await call('POST', '/domains', { domain, projectId: t.projectId }, { key: t.secretKey });
  if (created.status !== 201)
    throw new Error(`domain creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  for (const r of created.body.records) await publishDns(r.name, r.type, r.value);
  const verified = await call('GET', `/domains/${created.body.id}/verify`, undefined, { key: t.secretKey });
  if (verified.body.status !== 'verified') throw new Error(`domain not verified: ${JSON.stringify(verified.body)}`);
  return created.body;
}

/** Messaging's token signer with the run's tracking secret (from its database, as the service reads it). */
export async function messagingTokens(): Promise<TrackingTokens> {
  const db = new pg.Client({ connectionString: `${platform.env.DATABASE_URL}_messaging` });
  await db.connect();
  try {
    const { rows } = await db.query<{ value: string }>("SELECT value FROM settings WHERE key = 'tracking_secret'");
    return new TrackingTokens(rows[0].value);
  } finally {
    await db.end();
  }
}
