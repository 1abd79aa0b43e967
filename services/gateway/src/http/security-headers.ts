import type { RequestHandler } from 'express';

/**
 * What every HTML page's Content-Security-Policy ends with (none of these falls back to `default-src`): no `<base>`
 * (an injected one would send the page's relative links and forms elsewhere), forms post to this origin only, and
 * no framing by any page (clickjacking; X-Frame-Options says it to older browsers).
 */
export const PAGE_CSP_DIRECTIVES = "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Loopback names: HSTS for one would send every http://localhost port of the machine to https for max-age. */
const LOOPBACK = /^(localhost|.+\.localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/i;

export interface HstsOptions {
  /** HSTS_MAX_AGE in seconds; 0: no Strict-Transport-Security header. */
  maxAgeSeconds: number;
  publicUrl: string;
}

/**
 * Headers on every answer of the gateway; pages add their own Content-Security-Policy. No MIME sniffing (a JSON
 * answer or an upload is never read as script or HTML), no framing by other sites (clickjacking) and no Referer to
 * other origins: the console's reset and verification pages and the links in mail carry tokens in their URLs.
 * `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` with its own forms' POSTs,
 * which http/same-origin.ts cannot tell from another site's.
 *
 * `Strict-Transport-Security` on answers that went over HTTPS: the request itself is HTTPS
 * (`X-Forwarded-Proto: https` counts only from a proxy TRUST_PROXY trusts: `req.secure`), or PUBLIC_URL is https
 * (a TLS proxy in front; a browser ignores the header on a plain-http answer anyway). Never for a loopback host:
 * `npm start` on http://localhost:8080 keeps working. No includeSubDomains: the names under the public host are
 * not the platform's to pin.
 */
export function securityHeaders(hsts: HstsOptions): RequestHandler {
  const value = hsts.maxAgeSeconds > 0 ? `max-age=${hsts.maxAgeSeconds}` : undefined;
  const publicHttps = new URL(hsts.publicUrl).protocol === 'https:';
  return (req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'same-origin');
    if (value && (publicHttps || req.secure) && !LOOPBACK.test(req.hostname ?? '')) {
      res.setHeader('Strict-Transport-Security', value);
    }
    next();
  };
}
