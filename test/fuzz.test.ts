import fc from 'fast-check';
import { newTenant, platform, type Tenant } from './support/client.js';

// Generated hostile requests against every route the gateway serves: never a 5xx, and every 4xx
// in SPEC.md's envelope (or its flat `{error}`). Failures are collected, not shrunk, so one run
// reports every route that broke. FUZZ_SEED replays a run (the seed is printed on failure).

const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 7);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const CONCURRENCY = 4;

type Auth = 'secret' | 'public' | 'session' | 'none' | 'webhook';

interface Route {
  method: string;
  path: string;
  auth: Auth;
  /** Body keys the handler reads: generated bodies use them so input reaches the deeper checks. */
  body?: string[];
  /** Query parameters the handler reads. */
  query?: string[];
  /** Answers HTML pages (mail links): only "no 5xx" applies. */
  html?: boolean;
  /** Path parameters may also be the tenant's own project id (routes that cannot lock the tenant out). */
  ownProject?: boolean;
}

const CONTACT = ['email', 'subscribed', 'data'];
const TEMPLATE = ['name', 'description', 'subject', 'body', 'from', 'replyTo', 'type'];
const SEND = [
  'to',
  'subject',
  'body',
  'template',
  'from',
  'name',
  'subscribed',
  'data',
  'headers',
  'reply',
  'attachments',
];
const WEBHOOK = ['type', 'emailId', 'messageId', 'reason', 'bounceType', 'occurredAt', 'events'];
const CURSOR_LIST = ['limit', 'cursor'];
const SEGMENT = ['name', 'description', 'type', 'condition', 'trackMembership'];

const ROUTES: Route[] = [
  { method: 'GET', path: '/healthz', auth: 'none' },
  { method: 'GET', path: '/config', auth: 'none' },
  // contacts
  { method: 'GET', path: '/contacts', auth: 'secret', query: [...CURSOR_LIST, 'search', 'subscribed', 'sort', 'dir'] },
  { method: 'POST', path: '/contacts', auth: 'secret', body: CONTACT },
  { method: 'POST', path: '/contacts/lookup', auth: 'secret', body: ['emails'] },
  { method: 'POST', path: '/contacts/filter', auth: 'secret', body: ['condition', 'limit', 'offset'] },
  { method: 'GET', path: '/contacts/fields', auth: 'secret' },
  { method: 'GET', path: '/contacts/fields/:p/values', auth: 'secret', query: ['limit'] },
  { method: 'GET', path: '/contacts/fields/:p/usage', auth: 'secret' },
  { method: 'DELETE', path: '/contacts/fields/:p', auth: 'secret' },
  { method: 'POST', path: '/contacts/import', auth: 'secret', body: ['file'] },
  { method: 'GET', path: '/contacts/import/:p', auth: 'secret' },
  { method: 'POST', path: '/contacts/bulk-subscribe', auth: 'secret', body: ['contactIds'] },
  { method: 'POST', path: '/contacts/bulk-unsubscribe', auth: 'secret', body: ['contactIds'] },
  { method: 'POST', path: '/contacts/bulk-delete', auth: 'secret', body: ['contactIds'] },
  { method: 'GET', path: '/contacts/bulk/:p', auth: 'secret' },
  { method: 'GET', path: '/contacts/:p', auth: 'secret' },
  { method: 'PATCH', path: '/contacts/:p', auth: 'secret', body: CONTACT },
  { method: 'DELETE', path: '/contacts/:p', auth: 'secret' },
  // events
  { method: 'POST', path: '/v1/track', auth: 'public', body: ['email', 'event', 'subscribed', 'data'] },
  { method: 'POST', path: '/events/track', auth: 'secret', body: ['email', 'event', 'subscribed', 'data'] },
  { method: 'GET', path: '/events', auth: 'secret', query: [...CURSOR_LIST, 'name'] },
  { method: 'GET', path: '/events/stats', auth: 'secret', query: ['days'] },
  { method: 'GET', path: '/events/names', auth: 'secret' },
  { method: 'GET', path: '/events/contact/:p', auth: 'secret', query: CURSOR_LIST },
  { method: 'GET', path: '/events/:p/usage', auth: 'secret' },
  { method: 'DELETE', path: '/events/:p', auth: 'secret' },
  // segments
  { method: 'GET', path: '/segments', auth: 'secret' },
  { method: 'POST', path: '/segments', auth: 'secret', body: SEGMENT },
  { method: 'GET', path: '/segments/:p', auth: 'secret' },
  { method: 'PATCH', path: '/segments/:p', auth: 'secret', body: SEGMENT },
  { method: 'DELETE', path: '/segments/:p', auth: 'secret' },
  { method: 'GET', path: '/segments/:p/contacts', auth: 'secret', query: ['page', 'pageSize'] },
  { method: 'POST', path: '/segments/:p/members', auth: 'secret', body: ['emails', 'createMissing', 'subscribed'] },
  { method: 'DELETE', path: '/segments/:p/members', auth: 'secret', body: ['emails'] },
  { method: 'POST', path: '/segments/:p/compute', auth: 'secret' },
  { method: 'POST', path: '/segments/:p/refresh', auth: 'secret' },
  // domains, templates, send, verify
  { method: 'POST', path: '/domains', auth: 'secret', body: ['domain', 'projectId'] },
  { method: 'GET', path: '/domains/project/:p', auth: 'secret', ownProject: true },
  { method: 'GET', path: '/domains/:p/verify', auth: 'secret' },
  { method: 'DELETE', path: '/domains/:p', auth: 'secret' },
  { method: 'GET', path: '/templates', auth: 'secret', query: ['page', 'pageSize', 'type', 'search', 'sort', 'dir'] },
  { method: 'POST', path: '/templates', auth: 'secret', body: TEMPLATE },
  { method: 'GET', path: '/templates/:p', auth: 'secret' },
  { method: 'PATCH', path: '/templates/:p', auth: 'secret', body: TEMPLATE },
  { method: 'DELETE', path: '/templates/:p', auth: 'secret' },
  { method: 'POST', path: '/templates/:p/duplicate', auth: 'secret' },
  { method: 'GET', path: '/templates/:p/usage', auth: 'secret' },
  { method: 'POST', path: '/v1/send', auth: 'secret', body: SEND },
  { method: 'POST', path: '/v1/verify', auth: 'secret', body: ['email'] },
  // activity
  { method: 'GET', path: '/activity', auth: 'secret', query: [...CURSOR_LIST, 'type', 'contactId'] },
  { method: 'GET', path: '/activity/stats', auth: 'secret', query: ['days'] },
  { method: 'GET', path: '/activity/recent-count', auth: 'secret', query: ['minutes'] },
  { method: 'GET', path: '/activity/types', auth: 'secret' },
  { method: 'GET', path: '/activity/upcoming', auth: 'secret' },
  // emails
  {
    method: 'GET',
    path: '/emails',
    auth: 'secret',
    query: [...CURSOR_LIST, 'status', 'contactId', 'templateId', 'campaignId', 'from', 'to'],
  },
  { method: 'GET', path: '/emails/:p', auth: 'secret' },
  // analytics
  { method: 'GET', path: '/analytics/timeseries', auth: 'secret', query: ['from', 'to', 'interval'] },
  { method: 'GET', path: '/analytics/top-events', auth: 'secret', query: ['limit', 'days'] },
  // mail links and provider webhooks
  { method: 'GET', path: '/t/o/:p', auth: 'none', html: true },
  { method: 'GET', path: '/t/c/:p', auth: 'none', html: true },
  { method: 'GET', path: '/unsubscribe/:p', auth: 'none', html: true },
  { method: 'POST', path: '/unsubscribe/:p', auth: 'none', html: true },
  { method: 'GET', path: '/subscribe/:p', auth: 'none', html: true },
  { method: 'POST', path: '/subscribe/:p', auth: 'none', html: true },
  { method: 'GET', path: '/manage/:p', auth: 'none', html: true },
  { method: 'POST', path: '/webhooks/:p', auth: 'webhook', body: WEBHOOK },
  // identity, projects, members, invitations
  { method: 'POST', path: '/auth/signup', auth: 'none', body: ['email', 'password'] },
  { method: 'POST', path: '/auth/login', auth: 'none', body: ['email', 'password'] },
  { method: 'GET', path: '/auth/logout', auth: 'none' },
  { method: 'POST', path: '/auth/logout', auth: 'none' },
  { method: 'GET', path: '/auth/oauth-config', auth: 'none' },
  { method: 'GET', path: '/auth/oauth/:p', auth: 'none' },
  { method: 'GET', path: '/auth/oauth/:p/callback', auth: 'none', query: ['code', 'state', 'error'] },
  { method: 'GET', path: '/users/@me', auth: 'session' },
  { method: 'GET', path: '/users/@me/projects', auth: 'session' },
  { method: 'POST', path: '/users/@me/projects', auth: 'session', body: ['name'] },
  { method: 'PATCH', path: '/users/@me/projects/:p', auth: 'session', body: ['name'], ownProject: true },
  { method: 'POST', path: '/users/@me/projects/:p/regenerate-keys', auth: 'session' },
  { method: 'DELETE', path: '/users/@me/projects/:p', auth: 'session' },
  { method: 'GET', path: '/projects/:p/members', auth: 'session', ownProject: true },
  { method: 'POST', path: '/projects/:p/members', auth: 'session', body: ['email', 'role'], ownProject: true },
  { method: 'PATCH', path: '/projects/:p/members/:p', auth: 'session', body: ['role'], ownProject: true },
  { method: 'DELETE', path: '/projects/:p/members/:p', auth: 'session', ownProject: true },
  { method: 'GET', path: '/projects/:p/invitations', auth: 'session', ownProject: true },
  { method: 'DELETE', path: '/projects/:p/invitations/:p', auth: 'session', ownProject: true },
  { method: 'GET', path: '/users/@me/invitations', auth: 'session' },
  { method: 'POST', path: '/users/@me/invitations/:p/accept', auth: 'session' },
  { method: 'POST', path: '/users/@me/invitations/:p/decline', auth: 'session' },
  // billing (checkout, portal and invoices answer 501 on the test platform: no STRIPE_SECRET_KEY)
  { method: 'GET', path: '/users/@me/projects/:p/billing-limits', auth: 'session' },
  {
    method: 'PUT',
    path: '/users/@me/projects/:p/billing-limits',
    auth: 'session',
    body: ['emails', 'contacts', 'events'],
  },
  { method: 'GET', path: '/users/@me/projects/:p/billing-consumption', auth: 'session' },
  { method: 'POST', path: '/webhooks/incoming/:p', auth: 'none' },
];

const nest = (levels: number, leaf: unknown): unknown => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { k: v };
  return v;
};

const shortHostile = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\r\n',
    'x\r\nX-Injected: 1',
    '%00',
    '%',
    '../../etc/passwd',
    '{{',
    '{{ x }',
    '{% for %}',
    '\ud800',
    '\udfff',
    '💥',
    '\u202e',
    '9'.repeat(30),
    '-1',
    '1e400',
    'NaN',
    'null',
    'true',
    '__proto__',
    'constructor',
    "'; DROP TABLE contacts; --",
    '<script>alert(1)</script>',
    'a@b.co',
    `${'a'.repeat(300)}@example.com`,
    'Ann <a@example.com>',
    '2026-02-30 10:00:00',
    '9999-99-99',
    '00000000-0000-4000-8000-000000000000',
    'data.a.b',
    'event.x',
    'example.com',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

/** Bodies carry long strings (up to 70 KB); URLs now and then one over Node's 16 KB header limit. */
const hostileString = fc.oneof(
  shortHostile,
  fc.integer({ min: 1_000, max: 70_000 }).map((n) => 'x'.repeat(n)),
);
const urlString = fc.oneof(
  { weight: 12, arbitrary: shortHostile },
  { weight: 1, arbitrary: fc.constant('y'.repeat(20_000)) },
);

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -0, -1, 0.5, 1e20, 1e308, -1e308, 2 ** 31, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 1e20),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

const { value: hostileValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
    fc.integer({ min: 20, max: 300 }).map((n) => nest(n, 'deep')),
  ),
}));

/** A body shaped like the route's (its keys, hostile values), or any JSON, or text that is not JSON. */
const bodyFor = (route: Route) =>
  fc.oneof(
    fc
      .record(Object.fromEntries((route.body ?? ['x']).map((k) => [k, hostileValue])), { requiredKeys: [] })
      .map((b) => JSON.stringify(b)),
    hostileValue.map((v) => JSON.stringify(v) ?? 'null'),
    fc.constantFrom(
      '{',
      '{"a":',
      '"str"',
      '[]',
      '{"__proto__":{"x":1}}',
      '{"a":1}garbage',
      '\u0000',
      '{"a":"\\u0000"}',
      '{"a":"\\ud800"}',
    ),
  );

const queryFor = (route: Route) =>
  fc
    .tuple(
      fc.dictionary(
        fc.constantFrom(...(route.query ?? ['q']), 'extra', 'limit'),
        fc.oneof(urlString, fc.array(urlString, { maxLength: 2 })),
        { maxKeys: 4 },
      ),
      fc.constantFrom(
        '',
        '&%',
        '&%ZZ=1',
        '&%E0%A4%A=1',
        '&&&',
        '&a[b]=c',
        '&limit=99999999999999999999',
        '&days=999999999999&page=99999999999999999999',
      ),
    )
    .map(([params, raw]) => {
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(params)) for (const one of [v].flat()) search.append(k, String(one));
      const text = search.toString() + raw;
      return text ? `?${text}` : '';
    });

// A lone surrogate cannot be percent-encoded as UTF-8: sent as the bytes a careless client would send.
const encodeSegment = (s: string) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
};

const pathParam = (own: string[]) =>
  fc.oneof(
    urlString.filter((s) => s !== ''),
    fc.uuid(),
    fc.constantFrom(...own),
  );

const headerVariant = fc.constantFrom<Record<string, string>>(
  { 'content-type': 'application/json' },
  { 'content-type': 'application/json' },
  { 'content-type': 'application/json; charset=latin1' },
  { 'content-type': 'text/plain' },
  { 'content-type': 'application/json', 'content-encoding': 'gzip' },
  { 'content-type': 'application/json', 'content-encoding': 'x-unknown' },
  { 'content-type': 'application/json', 'idempotency-key': 'fuzz-\u00e9' },
);

interface Sample {
  url: string;
  body?: string;
  headers: Record<string, string>;
}

function samplesFor(route: Route, t: Tenant, seed: number): Sample[] {
  const own = route.ownProject ? [t.projectId] : ['00000000-0000-4000-8000-000000000000'];
  const segments = route.path.split('/').map((s) => (s === ':p' ? pathParam(own).map(encodeSegment) : fc.constant(s)));
  const arb = fc.record({
    path: fc.tuple(...segments).map((parts) => parts.join('/')),
    query: queryFor(route),
    body: route.method === 'GET' || route.method === 'DELETE' ? fc.constant(undefined) : bodyFor(route),
    headers: headerVariant,
  });
  return fc
    .sample(arb, { numRuns: RUNS_PER_ROUTE, seed })
    .map((s) => ({ url: s.path + s.query, body: s.body, headers: s.headers }));
}

function authHeaders(route: Route, t: Tenant): Record<string, string> {
  if (route.auth === 'secret') return { authorization: `Bearer ${t.secretKey}` };
  if (route.auth === 'public') return { authorization: `Bearer ${t.publicKey}` };
  if (route.auth === 'session') return { cookie: t.cookie };
  if (route.auth === 'webhook') return { 'x-webhook-secret': platform.env.WEBHOOK_SECRET ?? '' };
  return {};
}

const isEnvelope = (body: any, status: number) =>
  (body?.success === false &&
    typeof body.error?.code === 'string' &&
    typeof body.error.message === 'string' &&
    body.error.statusCode === status &&
    typeof body.error.requestId === 'string' &&
    typeof body.timestamp === 'string') ||
  (body !== null && typeof body === 'object' && Object.keys(body).length === 1 && typeof body.error === 'string');

/** One request; a description of what went wrong, or null. */
async function probe(route: Route, t: Tenant, s: Sample): Promise<string | null> {
  const sent = (s.body ?? '').slice(0, 200);
  const what = `${route.method} ${s.url.slice(0, 200)} ${JSON.stringify(s.headers)} body=${sent}`;
  let res: Response;
  try {
    res = await fetch(`${platform.gatewayUrl}${s.url}`, {
      method: route.method,
      headers: { ...s.headers, ...authHeaders(route, t) },
      body: s.body,
      redirect: 'manual',
    });
  } catch (err) {
    return `${what}: no answer (${String(err)})`;
  }
  const text = await res.text();
  if (res.status >= 500) return `${what}: ${res.status} ${text.slice(0, 300)}`;
  if (res.status < 400 || route.html) return null;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `${what}: ${res.status} is not JSON: ${text.slice(0, 200)}`;
  }
  return isEnvelope(body, res.status)
    ? null
    : `${what}: ${res.status} outside the error envelope: ${text.slice(0, 300)}`;
}

describe('fuzz: hostile requests to every route', () => {
  test(`no 5xx and every 4xx in the error envelope (seed ${SEED}, ${RUNS_PER_ROUTE} per route)`, async () => {
    const t = await newTenant();
    const jobs = ROUTES.flatMap((route, i) => samplesFor(route, t, SEED + i).map((s) => ({ route, s })));
    const failures: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const { route, s } = jobs[next++];
        const failure = await probe(route, t, s);
        if (failure) failures.push(failure);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    if (failures.length)
      console.error(`fuzz seed ${SEED}: ${failures.length} of ${jobs.length} requests failed\n${failures.join('\n')}`);
    expect(failures).toEqual([]);
  }, 90_000);
});
