import { timingSafeEqual } from 'node:crypto';
import type { Client } from '@connectrpc/connect';
import type { Request, Response, Router } from 'express';
import { AppError, unauthorized } from '@svc/lib/errors';
import { LinkRefusal, type MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { webhookError, webhookRequest } from './messaging-json.js';
import { z } from 'zod';
import { ApiRouter, type ResponseDoc } from '../http/api.js';
import { PAGE_CSP_DIRECTIVES } from '../http/security-headers.js';

const HTML = { description: 'A page for the recipient', content: { 'text/html': z.string() } };
const INVALID = { description: 'The link is not valid or has expired (a page)', content: { 'text/html': z.string() } };
const TOKEN = z.object({ token: z.string().openapi({ description: 'The signed token from the email' }) });
const link = (summary: string, responses: Record<number, ResponseDoc>, description?: string) => ({
  summary,
  ...(description ? { description } : {}),
  tag: 'Links in email',
  auth: 'none' as const,
  params: TOKEN,
  responses,
});

// Links inside sent mail: no API key (the signed token is the credential), no rate limit
// budget of the project, answers meant for mail clients and people rather than programs.
// The answer never depends on what messaging records (repeats, scanners' hits and a client's excess are not).

const AGED =
  'Recorded only within TRACKING_RECORD_DAYS (default 365) of the email being sent (the time is signed into the ' +
  'token); later the answer is the same and nothing is recorded. A repeat within a short window is not recorded, ' +
  'nor a hit of a mail scanner or bot (its user agent, or several links of one email from one client within ' +
  'seconds; TRACKING_DETECT_AUTOMATED).';

const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// No framing (a page with a button is a clickjacking target) and no Referer: the token is in the URL.
const PAGE_CSP = `default-src 'none'; style-src 'unsafe-inline'; ${PAGE_CSP_DIRECTIVES}`;

function page(res: Response, status: number, title: string, body: string): void {
  res
    .status(status)
    .set('Cache-Control', 'no-store')
    .set('Content-Security-Policy', PAGE_CSP)
    .set('Referrer-Policy', 'no-referrer')
    .type('html')
    .send(
      `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
        `<title>${escapeHtml(title)}</title>` +
        '<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}' +
        'button{font-size:1rem;padding:.5rem 1rem}</style>' +
        `</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    );
}

const REFUSED = {
  description:
    'The link does not redirect (README "Links that do not redirect"): a warning page showing the destination as ' +
    'text. 403: the sending project is suspended, the destination domain is blocked by the operator, or the ' +
    'destination is no plain http(s) URL; 410: the sending project was deleted',
  content: { 'text/html': z.string() },
};

/** The warning page of a refused link: its status, title and why, the destination shown as text (never a link). */
const REFUSALS: Partial<Record<LinkRefusal, { status: number; why: string }>> = {
  [LinkRefusal.PROJECT_SUSPENDED]: {
    status: 403,
    why: "The sender's account is suspended, so this link is not followed.",
  },
  [LinkRefusal.PROJECT_DELETED]: { status: 410, why: "The sender's account is closed, so this link is not followed." },
  [LinkRefusal.BLOCKED_DOMAIN]: {
    status: 403,
    why: 'The destination of this link is blocked on this platform, so it is not followed.',
  },
  [LinkRefusal.UNSAFE_URL]: { status: 403, why: 'The destination of this link is not a plain web address.' },
};

function refusedLink(res: Response, refused: LinkRefusal, url: string): void {
  const r = REFUSALS[refused] ?? { status: 403, why: 'This link is not followed.' };
  page(
    res,
    r.status,
    'Link not followed',
    `<p>${escapeHtml(r.why)}</p><p>It leads to the address below. Be careful with it: do not enter passwords or ` +
      'payment details on a page you reached from this email.</p>' +
      `<p><code style="word-break:break-all">${escapeHtml(url)}</code></p>`,
  );
}

const invalidLink = (res: Response) =>
  page(res, 404, 'Link not valid', '<p>This link is not valid or has expired.</p>');

/** Renders the 404 page for a bad token instead of the JSON envelope. */
async function orInvalid(res: Response, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return invalidLink(res);
    throw err;
  }
}

const form = (action: string, label: string) =>
  `<form method="post" action="${escapeHtml(action)}"><button type="submit">${escapeHtml(label)}</button></form>`;

/**
 * A request that is no person opening or clicking: HEAD (link scanners check a link without following it) or a
 * browser's speculative prefetch (`Sec-Purpose: prefetch`, older `Purpose`/`X-Purpose`, Firefox's `X-Moz`). It is
 * answered like the GET, and nothing is recorded.
 */
export function isCheckOnly(req: Request): boolean {
  if (req.method === 'HEAD') return true;
  const purpose = `${req.get('sec-purpose') ?? ''} ${req.get('purpose') ?? ''} ${req.get('x-purpose') ?? ''} ${
    req.get('x-moz') ?? ''
  }`;
  return /\b(prefetch|preview)\b/i.test(purpose);
}

export function trackingRouter(messaging: Client<typeof MessagingService>): Router {
  const r = new ApiRouter();
  const client = (req: { get(name: string): string | undefined; ip?: string }) => ({
    userAgent: req.get('user-agent') ?? '',
    ip: req.ip ?? '',
  });

  r.get(
    '/t/o/:token',
    link(
      'Open-tracking pixel (HEAD or a prefetch is answered alike and records no open)',
      {
        200: { description: '1x1 GIF', content: { 'image/gif': z.string().openapi({ format: 'binary' }) } },
      },
      AGED,
    ),
    async (req, res) => {
      await messaging.trackOpen({ token: String(req.params.token), ...client(req), checkOnly: isCheckOnly(req) });
      res.status(200).set('Cache-Control', 'no-store, max-age=0').type('gif').send(PIXEL);
    },
  );

  r.get(
    '/t/c/:token',
    link(
      'Tracked link: records the click (not for HEAD or a prefetch), redirects to the target',
      {
        302: { description: 'Redirect to the link target', headers: { Location: 'The target URL' } },
        403: REFUSED,
        404: INVALID,
        410: REFUSED,
      },
      `${AGED} Redirects only to a plain http(s) URL of a project neither suspended nor deleted, outside the ` +
        'domains the operator blocks (TRACKING_BLOCKED_DOMAINS); else a warning page shows the URL as text and ' +
        'nothing is recorded.',
    ),
    async (req, res) => {
      await orInvalid(res, async () => {
        const token = String(req.params.token);
        const out = await messaging.trackClick({ token, ...client(req), checkOnly: isCheckOnly(req) });
        if (out.refused !== LinkRefusal.UNSPECIFIED) return refusedLink(res, out.refused, out.url);
        res.set('Cache-Control', 'no-store').redirect(302, out.url);
      });
    },
  );

  // GET only shows a confirmation (link scanners must not unsubscribe anyone); POST acts.
  // RFC 8058 one-click: mail providers POST `List-Unsubscribe=One-Click` to the same URL.
  r.get(
    '/unsubscribe/:token',
    link('Unsubscribe confirmation page (GET never changes anything)', { 200: HTML, 404: INVALID }),
    async (req, res) => {
      await orInvalid(res, async () => {
        const s = await messaging.setSubscription({ token: String(req.params.token) });
        if (!s.subscribed)
          return page(
            res,
            200,
            'You are unsubscribed',
            `<p>${escapeHtml(s.maskedEmail)} receives no more marketing email from this sender.</p>`,
          );
        page(
          res,
          200,
          'Unsubscribe',
          `<p>Stop marketing email to ${escapeHtml(s.maskedEmail)}?</p>${form(req.originalUrl, 'Unsubscribe')}`,
        );
      });
    },
  );

  r.post(
    '/unsubscribe/:token',
    link('Unsubscribe (also RFC 8058 one-click List-Unsubscribe=One-Click)', { 200: HTML, 404: INVALID }),
    async (req, res) => {
      await orInvalid(res, async () => {
        const s = await messaging.setSubscription({ token: String(req.params.token), subscribed: false });
        page(
          res,
          200,
          'You are unsubscribed',
          `<p>${escapeHtml(s.maskedEmail)} receives no more marketing email from this sender.</p>`,
        );
      });
    },
  );

  r.get('/subscribe/:token', link('Subscribe confirmation page', { 200: HTML, 404: INVALID }), async (req, res) => {
    await orInvalid(res, async () => {
      const s = await messaging.setSubscription({ token: String(req.params.token) });
      if (s.subscribed)
        return page(res, 200, 'You are subscribed', `<p>${escapeHtml(s.maskedEmail)} is subscribed.</p>`);
      page(
        res,
        200,
        'Subscribe',
        `<p>Receive email at ${escapeHtml(s.maskedEmail)} again?</p>${form(req.originalUrl, 'Subscribe')}`,
      );
    });
  });

  r.post('/subscribe/:token', link('Subscribe again', { 200: HTML, 404: INVALID }), async (req, res) => {
    await orInvalid(res, async () => {
      const s = await messaging.setSubscription({ token: String(req.params.token), subscribed: true });
      page(res, 200, 'You are subscribed', `<p>${escapeHtml(s.maskedEmail)} is subscribed.</p>`);
    });
  });

  r.get('/manage/:token', link('Email preferences page', { 200: HTML, 404: INVALID }), async (req, res) => {
    await orInvalid(res, async () => {
      const token = String(req.params.token);
      const s = await messaging.setSubscription({ token });
      const action = s.subscribed
        ? form(`/unsubscribe/${token}`, 'Unsubscribe')
        : form(`/subscribe/${token}`, 'Subscribe');
      page(
        res,
        200,
        'Email preferences',
        `<p>${escapeHtml(s.maskedEmail)} is ${s.subscribed ? 'subscribed' : 'not subscribed'}.</p>${action}`,
      );
    });
  });

  return r.router;
}

/**
 * POST /webhooks/{provider}: notifications from the mail infrastructure, authenticated by
 * the shared secret in `X-Webhook-Secret` (WEBHOOK_SECRET; unset refuses every call).
 */
export function webhooksRouter(messaging: Client<typeof MessagingService>, secret: string | undefined): Router {
  const r = new ApiRouter();
  const expected = secret ? Buffer.from(secret) : undefined;
  r.post(
    '/webhooks/:provider',
    {
      summary: 'Delivery notifications from the mail infrastructure (bounces, complaints, deliveries)',
      tag: 'Webhooks',
      auth: 'webhook',
      body: z
        .union([z.object({ events: z.array(z.record(z.unknown())) }), z.record(z.unknown())])
        .openapi({ description: '{events: [...]} or one notification' }),
      responses: {
        200: z.object({ success: z.literal(true), processed: z.number().int(), ignored: z.number().int() }),
      },
    },
    async (req, res) => {
      const given = Buffer.from(req.get('x-webhook-secret') ?? '');
      if (!expected || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw unauthorized('UNAUTHORIZED', 'Missing or wrong X-Webhook-Secret header');
      }
      const provider = String(req.params.provider);
      const out = await messaging.handleProviderWebhook(webhookRequest(req.body, provider)).catch((err) => {
        throw webhookError(req.body, err);
      });
      res.json({ success: true, processed: out.processed, ignored: out.ignored });
    },
  );
  return r.router;
}
