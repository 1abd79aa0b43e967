import cookieParser from 'cookie-parser';
import express from 'express';
import { z } from 'zod';
import type { IdempotencyStore } from '@svc/lib/idempotency-store';
import type { Logger } from '@svc/lib/logger';
import { scrape } from '@svc/lib/metrics';
import type { RateLimiter } from '@svc/lib/rate-limit';
import type { TokenBuckets } from '@svc/lib/token-bucket';
import { parseTrustProxy } from '@svc/lib/trust-proxy';
import type { Clients } from './clients.js';
import type { GatewayConfig } from './config.js';
import { ApiRouter, notInDocument } from './http/api.js';
import { Authenticator } from './http/auth.js';
import { errorHandler, routeNotFound } from './http/envelope.js';
import { chain, keyGuards } from './http/guards.js';
import { jsonBody, refuseNulInUrl } from './http/input-guard.js';
import { LoginGuard } from './http/login-guard.js';
import { methodNotAllowed } from './http/method-not-allowed.js';
import { signupBudget } from './http/rate-limit.js';
import type { KeyCache } from './http/key-cache.js';
import { readyz, type ReadinessCheck } from './http/readiness.js';
import { requestId } from './http/request-id.js';
import { securityHeaders } from './http/security-headers.js';
import { trackCors } from './http/track-cors.js';
import { installLanes } from './http/lane.js';
import { analyticsRouter } from './routes/analytics.js';
import { campaignsRouter } from './routes/campaigns.js';
import { contactJobsRouter } from './routes/contact-jobs.js';
import { consoleRouter } from './routes/console.js';
import { contactsRouter } from './routes/contacts.js';
import { eventsRouter, trackHandler } from './routes/events.js';
import { devMailRouter } from './routes/dev-mail.js';
import { emailsRouter } from './routes/emails.js';
import { messagingRouter, sendHandler } from './routes/messaging.js';
import { segmentsRouter } from './routes/segments.js';
import { workflowsRouter } from './routes/workflows.js';
import { trackingRouter, webhooksRouter } from './routes/tracking.js';
import { usageRouter } from './routes/usage.js';
import { uploadsRouter } from './routes/uploads.js';
import { identityRouter } from './routes/identity.js';
import { oauthRouter } from './routes/oauth.js';
import { landingRouter, VERSION } from './routes/landing.js';
import { apiDocsRouter } from './routes/api-docs.js';
import { setupStateRouter } from './routes/setup-state.js';
import { billingRouter, paymentWebhookRouter } from './routes/billing.js';
import { stripeProvider } from './billing/stripe-provider.js';
import { projectSafetyRouter } from './routes/project-safety.js';

const HEALTH = z.object({ status: z.literal('ok') });
const READINESS = z.object({
  status: z.enum(['ok', 'unavailable', 'draining']),
  checks: z.record(z.enum(['ok', 'down'])),
  services: z.record(z.record(z.enum(['ok', 'down']))).openapi({ description: 'Per service: database, migrations' }),
});
const PUBLIC_CONFIG = z.object({
  signupEnabled: z.boolean(),
  oauthProviders: z.array(z.string()),
  embedded: z.boolean(),
});

export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  clients: Clients;
  limiter: RateLimiter;
  /** Failed sign-ins per client and per account (http/login-guard.ts). */
  loginBuckets: TokenBuckets;
  idempotencyStore: IdempotencyStore;
  keyCache: KeyCache;
  sessionSecret: string;
  embedded: boolean;
  /** What `GET /readyz` asks: each service's health, Redis, the bus. */
  readiness: Record<string, ReadinessCheck>;
  /** What `GET /readyz` details per service: its database and migrations. */
  readinessParts?: Record<string, Record<string, ReadinessCheck>>;
}

export function createApp(deps: GatewayDeps) {
  const { config, logger, clients } = deps;
  const app = express();
  app.disable('x-powered-by');
  // No ETag (a SHA-1 of every JSON answer) on API answers: only a GET could use it, and no client revalidates
  // them. The console's static files keep theirs (express.static sets its own).
  app.set('etag', false);
  // X-Forwarded-For is believed only from the proxies TRUST_PROXY names: req.ip keys the login and sign-up limits.
  app.set('trust proxy', (config.trustProxy && parseTrustProxy(config.trustProxy)) || false);

  const auth = new Authenticator(clients.identity, deps.keyCache, config.publicUrl);
  const guards = keyGuards(auth, deps.limiter, deps.idempotencyStore, config);
  const loginGuard = new LoginGuard(deps.limiter, deps.loginBuckets, config.login);

  const headers = securityHeaders({ maxAgeSeconds: config.hstsMaxAge, publicUrl: config.publicUrl });
  app.use(requestId(logger));
  app.use(headers);
  app.use(refuseNulInUrl);
  app.use(cookieParser(deps.sessionSecret));
  const meta = new ApiRouter();
  meta.get(
    '/healthz',
    { summary: 'Liveness: the gateway process answers', tag: 'Meta', auth: 'none', responses: { 200: HEALTH } },
    (_req, res) => {
      res.json({ status: 'ok' });
    },
  );
  meta.get(
    '/readyz',
    {
      summary: 'Readiness: every service, Redis and the bus can serve',
      tag: 'Meta',
      auth: 'none',
      responses: { 200: READINESS, 503: READINESS },
    },
    readyz(deps.readiness, deps.readinessParts),
  );
  // Prometheus metrics of this process, no API key. With METRICS_PORT they are served there only, off the public port
  // (the Helm chart sets it: an Ingress routing `/` to the gateway would otherwise publish them).
  if (config.metricsEnabled && config.metricsPort === undefined) {
    meta.get(
      '/metrics',
      {
        summary: 'Prometheus metrics of the gateway process',
        tag: 'Meta',
        auth: 'none',
        responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': z.string() } } },
      },
      async (_req, res) => {
        const { contentType, body } = await scrape();
        res.type(contentType).send(body);
      },
    );
  }
  meta.get(
    '/config',
    {
      summary: 'Public settings of this deployment for the dashboard',
      tag: 'Meta',
      auth: 'none',
      responses: { 200: PUBLIC_CONFIG },
    },
    async (_req, res) => {
      const { providers } = await clients.identity.getOAuthConfig({});
      res.json({
        signupEnabled: !config.signupDisabled,
        oauthProviders: providers.map((p) => p.id),
        embedded: deps.embedded,
      });
    },
  );
  app.use(meta.router);
  app.use(landingRouter(deps.embedded));
  app.use(notInDocument(consoleRouter(), 'the web console: pages, not API operations'));
  app.use(apiDocsRouter(app, { version: VERSION, serverUrl: config.publicUrl }));

  // Web pages of any origin may call /v1/track with the public key, without credentials (http/track-cors.ts).
  app.use((req, res, next) => (req.path === '/v1/track' ? trackCors(req, res, next) : next()));

  // Before the JSON parser: a payment provider signs the raw bytes of its notifications.
  const paymentProvider = stripeProvider(config.stripe);
  app.use(paymentWebhookRouter(clients.identity, paymentProvider, logger));

  const json = chain(...jsonBody(config.bodyLimit));
  app.use((req, res, next) => (req.path === '/v1/send' ? next() : json(req, res, next)));

  // The ingestion routes first: every /v1/track then skips the route matching of the routers below.
  const track = trackHandler(clients.contacts, config.trackBatch);
  app.use(eventsRouter(clients.contacts, guards, track));
  app.use(identityRouter(clients.identity, auth, loginGuard, signupBudget(deps.limiter, config.signupsPerHour)));
  app.use(oauthRouter(clients.identity, auth, config.publicUrl));
  app.use(setupStateRouter(clients, auth));
  app.use(billingRouter(clients, auth, paymentProvider, config.publicUrl));
  app.use(projectSafetyRouter(clients, auth));
  app.use(contactJobsRouter(clients.contacts, guards));
  app.use(contactsRouter(clients.contacts, guards));
  const send = sendHandler(clients.messaging, config.sendBatch);
  app.use(messagingRouter(clients.messaging, guards, send, clients.workflows, clients.campaigns));
  app.use(emailsRouter(clients.messaging, guards));
  app.use(segmentsRouter(clients.segments, guards));
  app.use(usageRouter(clients, guards));
  app.use(analyticsRouter(clients.messaging, clients.contacts, guards));
  app.use(campaignsRouter(clients.campaigns, guards));
  app.use(workflowsRouter(clients.workflows, guards));
  app.use(trackingRouter(clients.messaging));
  app.use(uploadsRouter(clients.messaging, guards, config.publicUrl));
  app.use(webhooksRouter(clients.messaging, config.webhookSecret));
  if (deps.embedded) app.use(devMailRouter(clients, auth, loginGuard, config));

  app.use(methodNotAllowed(app));
  app.use(routeNotFound);
  const onError = errorHandler(logger);
  app.use(onError);

  // The common POST /v1/track and /v1/send run the same handlers as their routes above, without the router (lane.ts).
  installLanes(app, [
    {
      path: '/v1/track',
      bodyLimit: config.bodyLimit,
      before: [requestId(logger), headers, trackCors],
      after: [...guards.publicSteps, track],
      onError,
    },
    {
      path: '/v1/send',
      bodyLimit: config.bodyLimit,
      before: [requestId(logger), headers, ...guards.sendSteps.beforeBody],
      after: [...guards.sendSteps.afterBody, send],
      onError,
    },
  ]);
  return app;
}
