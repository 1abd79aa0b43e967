import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { OpenAPIV3_1 } from 'openapi-types';
import { parseConfig, parseEnv } from '@svc/lib/config';
import { createApp, type GatewayDeps } from '../services/gateway/src/app.js';
import { gatewayEnv } from '../services/gateway/src/config.js';
import { declaredOperations, openApiPath, servedRoutes } from '../services/gateway/src/http/api.js';
import { SERVICES } from '../services/registry.js';
import { call, eventually, newTenant, platform, uniqueEmail } from './support/client.js';
import { ROOT } from './support/processes.js';

// GET /openapi.json is generated from the gateway's route declarations (services/gateway/src/http/api.ts).
// Here: every route the Express app serves is declared and in the document, the document is valid
// OpenAPI 3.1, every route documented as authenticated refuses a request without credentials, and
// GET /docs renders every operation in a real browser without reaching anything but the gateway.

const execFileAsync = promisify(execFile);
const CHROMIUM = '/usr/bin/chromium';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The gateway's Express app, built in this process to walk its router stack (it serves no request here). */
function gatewayApp(opts: { embedded: boolean; metricsEnabled: boolean }) {
  const inert: unknown = new Proxy(() => inert, { get: () => inert, apply: () => inert });
  // The configuration a default environment gives, as bin/platform.ts reads it.
  const config = { ...parseConfig({}, SERVICES), ...parseEnv(gatewayEnv, {}), metricsEnabled: opts.metricsEnabled };
  const deps = {
    config,
    logger: inert,
    clients: inert,
    limiter: inert,
    loginBuckets: inert,
    idempotencyStore: inert,
    keyCache: inert,
    sessionSecret: 'openapi-test-session-secret',
    embedded: opts.embedded,
    readiness: {},
  };
  return createApp(deps as unknown as GatewayDeps);
}

type Doc = OpenAPIV3_1.Document;

function documented(doc: Doc): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) if (item?.[method]) out.add(`${method} ${path}`);
  }
  return out;
}

const key = (r: { method: string; path: string }) => `${r.method} ${openApiPath(r.path).path}`;

describe('OpenAPI document', () => {
  let doc: Doc;
  let metricsEnabled: boolean;

  beforeAll(async () => {
    const res = await call<Doc>('GET', '/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
    metricsEnabled = (await fetch(`${platform.gatewayUrl}/metrics`)).status === 200;
  });

  test('every route the app serves is declared, in every mode (embedded adds the mail viewer)', () => {
    for (const embedded of [false, true]) {
      const app = gatewayApp({ embedded, metricsEnabled: true });
      const all = servedRoutes(app);
      const served = all.filter((r) => !r.excluded);
      const declared = new Set(declaredOperations(app).map(key));
      expect(served.length).toBeGreaterThan(100);
      expect(served.map(key).filter((r) => !declared.has(r))).toEqual([]);
      // Only the web console's pages are deliberately left out, each with its reason.
      const excluded = all.filter((r) => r.excluded);
      expect(excluded.length).toBeGreaterThan(0);
      expect(excluded.filter((r) => !r.path.startsWith('/app'))).toEqual([]);
      if (embedded) expect(declared).toContain('get /dev/mail/{id}');
    }
  });

  test('the running gateway documents every route its app serves', () => {
    const served = servedRoutes(gatewayApp({ embedded: false, metricsEnabled }))
      .filter((r) => !r.excluded)
      .map(key);
    const inDoc = documented(doc);
    expect(served.filter((r) => !inDoc.has(r))).toEqual([]);
    // And nothing that is not served.
    expect([...inDoc].filter((r) => !served.includes(r))).toEqual([]);
    for (const r of ['post /v1/send', 'post /v1/track', 'get /contacts/{id}', 'post /workflows/{id}/steps']) {
      expect(inDoc).toContain(r);
    }
  });

  test('is valid OpenAPI 3.1, with the three security schemes and the error envelope', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // validate() dereferences in place: give it a copy.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
    const schemes = doc.components?.securitySchemes ?? {};
    expect(schemes.secretKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.publicKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.session).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'svc_session' });
    expect(schemes.consoleSession).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-project-id' });
    const console = { session: [], consoleSession: [] };
    expect(doc.paths?.['/v1/track']?.post?.security).toEqual([{ publicKey: [] }, { secretKey: [] }, console]);
    expect(doc.paths?.['/contacts']?.get?.security).toEqual([{ secretKey: [] }, console]);
    expect(doc.paths?.['/users/@me']?.get?.security).toEqual([{ session: [] }]);
    const send = doc.paths?.['/v1/send']?.post;
    expect(send?.responses?.['422']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    });
    // Signing out: a GET another site started answers a confirmation page; its form POSTs /auth/logout.
    const logout = doc.paths?.['/auth/logout'];
    const page = logout?.get?.responses?.['200'] as OpenAPIV3_1.ResponseObject;
    expect(Object.keys(page.content ?? {}).sort()).toEqual(['application/json', 'text/html']);
    expect(Object.keys(logout?.post?.responses ?? {})).toEqual(expect.arrayContaining(['200', '303', '403']));
    // Opens and clicks of an aged token, or of a scanner, are answered and not recorded.
    for (const path of ['/t/o/{token}', '/t/c/{token}']) {
      expect(doc.paths?.[path]?.get?.description).toContain('TRACKING_RECORD_DAYS');
      expect(doc.paths?.[path]?.get?.description).toContain('TRACKING_DETECT_AUTOMATED');
    }
    // A tracked link of a suspended or deleted project, or to an unsafe or blocked URL, answers a warning page.
    const click = doc.paths?.['/t/c/{token}']?.get;
    expect(click?.description).toContain('TRACKING_BLOCKED_DOMAINS');
    expect(Object.keys(click?.responses ?? {})).toEqual(expect.arrayContaining(['302', '403', '404', '410']));
    const contact = doc.components?.schemas?.Contact as OpenAPIV3_1.SchemaObject;
    expect(Object.keys(contact.properties ?? {})).toEqual(
      expect.arrayContaining(['id', 'email', 'subscribed', 'data', 'createdAt', 'updatedAt']),
    );
    // An execution's chain depth (the loop guard's count), always present.
    const execution = doc.components?.schemas?.WorkflowExecution as OpenAPIV3_1.SchemaObject;
    expect(execution.properties?.chainDepth).toMatchObject({ type: 'integer' });
    expect(execution.required).toContain('chainDepth');
  });

  test('every operation documented with credentials answers 401 without them', async () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const method of METHODS) {
        const op = item?.[method];
        if (!op?.security?.length) continue;
        const url = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
        const res = await call(method.toUpperCase(), url, method === 'get' ? undefined : {}, {
          headers: { accept: 'application/json' },
        });
        checked++;
        if (res.status !== 401) wrong.push(`${method} ${path}: ${res.status}`);
      }
    }
    expect(checked).toBeGreaterThan(90);
    expect(wrong).toEqual([]);
  });

  test('what the gateway answers has a documented status and matches its documented schema', async () => {
    // OpenAPI 3.1 schemas are JSON Schema 2020-12; `$ref`s point into the document's components.
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const refs = (schema: unknown) =>
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
    const routes = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
      METHODS.filter((m) => item?.[m]).map((m) => ({
        method: m,
        path,
        re: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
        op: item?.[m] as OpenAPIV3_1.OperationObject,
      })),
    );
    const t = await newTenant();
    const wrong: string[] = [];
    const check = async (method: string, url: string, body?: unknown) => {
      const res = await call(method, url, body, { key: t.secretKey });
      const route = routes.find((r) => r.method === method.toLowerCase() && r.re.test(url.split('?')[0]));
      const answer = route?.op.responses?.[String(res.status)] as OpenAPIV3_1.ResponseObject | undefined;
      const schema = answer?.content?.['application/json']?.schema;
      if (!answer) wrong.push(`${method} ${url}: ${res.status} is not documented`);
      else if (schema && !ajv.validate(refs(schema), res.body)) {
        wrong.push(`${method} ${url} ${res.status}: ${ajv.errorsText()} in ${JSON.stringify(res.body)}`);
      }
      return res;
    };
    // SPEC.md's flat 400 bodies of three create endpoints.
    expect((await check('POST', '/contacts', {})).body).toEqual({ error: 'email is required' });
    expect((await check('POST', '/templates', { name: 'n', subject: 's', body: 'b' })).status).toBe(400);
    expect((await check('POST', '/segments', { name: 'No condition' })).status).toBe(400);
    // A bulk job's notFound lists the ids that matched no contact.
    const contact = await check('POST', '/contacts', { email: uniqueEmail('doc') });
    const missing = '00000000-0000-4000-8000-000000000000';
    const job = await check('POST', '/contacts/bulk-unsubscribe', { contactIds: [contact.body.id, missing] });
    const done = await eventually(async () => {
      const res = await check('GET', `/contacts/bulk/${job.body.jobId}`);
      return res.body.status === 'completed' ? res : undefined;
    });
    expect(done.body.notFound).toEqual([missing]);
    // Malformed query parameters (SPEC.md: an unknown campaign status is a 400).
    expect((await check('GET', '/campaigns?status=BOGUS')).status).toBe(400);
    expect((await check('GET', '/templates?type=BOGUS')).status).toBe(400);
    expect((await check('GET', '/contacts?limit=abc')).status).toBe(422);
    expect((await check('GET', '/contacts?cursor=forged')).status).toBe(400);
    expect((await check('GET', '/activity/stats?days=0')).status).toBe(422);
    expect((await check('GET', '/events/stats?days=0')).status).toBe(422);
    expect(wrong).toEqual([]);
  });

  test('GET /docs renders every operation in a real browser, reaching nothing but the gateway', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const page = await fetch(`${platform.gatewayUrl}/docs`);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    // Playwright runs in its own Node process (inside Jest's VM modules its disposables fail).
    const script = `
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.BROWSER_CHECK);
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = { requests: [], errors: [] };
try {
  const page = await browser.newPage();
  page.on('request', (r) => seen.requests.push(r.url()));
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') seen.errors.push(m.text()); });
  page.on('response', (r) => { if (r.status() >= 400) seen.errors.push(r.status() + ' ' + r.url()); });
  await page.goto(c.base + '/docs');
  await page.waitForSelector('body[data-operations]', { timeout: 30000 });
  seen.operations = Number(await page.getAttribute('body', 'data-operations'));
  seen.tags = await page.locator('nav a').allTextContents();
  const send = page.locator('details.op', { has: page.locator('.path', { hasText: /^\\/v1\\/send$/ }) });
  await send.locator('summary').first().click();
  seen.sendText = await send.textContent();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen));
`;
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      timeout: 90_000,
      env: { ...process.env, BROWSER_CHECK: JSON.stringify({ chromium: CHROMIUM, base: platform.gatewayUrl }) },
    });
    const seen = JSON.parse(stdout);
    expect(seen.errors).toEqual([]);
    expect(seen.operations).toBe(documented(doc).size);
    expect(seen.tags).toEqual(expect.arrayContaining(['Contacts', 'Sending', 'Workflows', 'Campaigns']));
    expect(seen.sendText).toContain('Send a transactional email');
    expect(seen.sendText).toContain('Request body (application/json)');
    expect(seen.sendText).toContain('secretKey');
    expect(seen.requests.length).toBeGreaterThanOrEqual(4);
    expect(seen.requests.filter((u: string) => !u.startsWith(`${platform.gatewayUrl}/`))).toEqual([]);
  });
});
