import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './processes.js';

interface PlatformInfo {
  runId: string;
  gatewayUrl: string;
  env: Record<string, string>;
}

export const platform: PlatformInfo = JSON.parse(readFileSync(path.join(ROOT, '.test-run', 'platform.json'), 'utf8'));

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  key?: string;
  cookie?: string;
  headers?: Record<string, string>;
  /** Sent as is (for malformed JSON); otherwise `body` is JSON-encoded. */
  raw?: string | Buffer | FormData;
  baseUrl?: string;
}

export async function call<T = any>(
  method: string,
  url: string,
  body?: unknown,
  opts: RequestOptions = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  let payload: string | Buffer | FormData | undefined;
  if (opts.raw !== undefined) payload = opts.raw;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined && !(payload instanceof FormData) && !headers['content-type'])
    headers['content-type'] = 'application/json';
  const res = await fetch(`${opts.baseUrl ?? platform.gatewayUrl}${url}`, {
    method,
    headers,
    body: payload as BodyInit | undefined,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

let counter = 0;
export const uniqueEmail = (tag = 'user') =>
  `${tag}-${Date.now().toString(36)}-${++counter}-${Math.floor(Math.random() * 1e6)}@example.com`;

export interface Tenant {
  cookie: string;
  userId: string;
  projectId: string;
  publicKey: string;
  secretKey: string;
}

export async function signUp(
  email = uniqueEmail('owner'),
  password = 'password-123',
): Promise<{ cookie: string; userId: string; email: string }> {
  const res = await fetch(`${platform.gatewayUrl}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${await res.text()}`);
  const cookie = sessionCookie(res.headers);
  const user = (await res.json()) as { id: string };
  return { cookie, userId: user.id, email };
}

/** The cookies an answer sets, as a request's `cookie` header (the session cookie after a sign-up or sign-in). */
export function sessionCookie(headers: Headers): string {
  return headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/** A fresh user with a fresh project and its keys: the bootstrap contract of DESIGN.md. */
export async function newTenant(): Promise<Tenant> {
  const { cookie, userId } = await signUp();
  const res = await call('POST', '/users/@me/projects', { name: 'Test project' }, { cookie });
  if (res.status !== 201) throw new Error(`project creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { cookie, userId, projectId: res.body.id, publicKey: res.body.publicKey, secretKey: res.body.secretKey };
}

/** Polls until `check` returns a value that is not undefined (async effects), failing after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} not reached within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

export function expectEnvelope(res: Answer, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ success: false, error: { code, statusCode: status } });
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.requestId).toMatch(/^req_|^[A-Za-z0-9._:-]+$/);
  expect(new Date(res.body.timestamp).toString()).not.toBe('Invalid Date');
}
