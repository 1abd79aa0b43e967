import type { RequestHandler } from 'express';

/**
 * What every HTML page's Content-Security-Policy ends with (none of these falls back to `default-src`): no `<base>`
 * (an injected one would send the page's relative links and forms elsewhere), forms post to this origin only, and
 * no framing by any page (clickjacking; X-Frame-Options says it to older browsers).
 */
export const PAGE_CSP_DIRECTIVES = "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * Headers on every answer of the gateway; pages add their own Content-Security-Policy. No MIME sniffing (a JSON
 * answer or an upload is never read as script or HTML), no framing by other sites (clickjacking) and no Referer to
 * other origins: the console's reset and verification pages and the links in mail carry tokens in their URLs.
 * `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` with its own forms' POSTs,
 * which http/same-origin.ts cannot tell from another site's.
 */
export const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'same-origin');
  next();
};
