import type { Request, RequestHandler } from 'express';
import { AppError } from '@svc/lib/errors';

// Cross-site request forgery: the session cookie is SameSite=Lax, which keeps it off another site's POST, but
// not off a request from a sibling subdomain (the same "site") nor off a sign-in form, whose answer sets the
// cookie (login CSRF: the victim works in the attacker's account). Browsers send `Origin` on every POST, PUT,
// PATCH and DELETE; a client without it (curl, a server) is no browser acting for someone else.

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

const refused = (origin: string) =>
  new AppError({
    code: 'CROSS_SITE_REQUEST',
    status: 403,
    message: `Refused: a signed-in change sent by another site (Origin ${origin.slice(0, 200)})`,
  });

/** Whether `from` (an Origin, or a Referer URL) is PUBLIC_URL's origin or the host the request was sent to. */
function isOwn(from: string, req: Request, publicOrigin: string): boolean {
  if (from === publicOrigin) return true;
  try {
    const url = new URL(from);
    return url.origin === publicOrigin || url.host === req.get('host');
  } catch {
    return false;
  }
}

/**
 * Throws 403 CROSS_SITE_REQUEST for a state-changing request whose `Origin` is neither PUBLIC_URL's origin nor
 * the host it was sent to (`Origin: null`, from a sandboxed frame or a privacy redirect, is refused too).
 */
export function checkSameOrigin(req: Request, publicOrigin: string): void {
  if (SAFE.has(req.method)) return;
  const origin = req.get('origin');
  if (origin === undefined || isOwn(origin, req, publicOrigin)) return;
  throw refused(origin);
}

/**
 * Whether a GET was started by a page of another origin (a link or a script's navigation there), for the few GETs
 * that change something (GET /auth/logout, which SPEC.md keeps): Fetch Metadata's `Sec-Fetch-Site` where the
 * browser sends it (`same-site` is a sibling subdomain: another origin too), else an `Origin` or `Referer` naming
 * another origin. A typed or bookmarked URL (`none`) and a request with neither header (curl) are not.
 */
export function startedElsewhere(req: Request, publicOrigin: string): boolean {
  const site = req.get('sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const from = req.get('origin') ?? req.get('referer');
  return from !== undefined && !isOwn(from, req, publicOrigin);
}

/** The check above as a route step (the mail viewer's sign-in form). */
export const sameOrigin =
  (publicOrigin: string): RequestHandler =>
  (req, _res, next) => {
    checkSameOrigin(req, publicOrigin);
    next();
  };

export const originOf = (publicUrl: string): string => new URL(publicUrl).origin;
