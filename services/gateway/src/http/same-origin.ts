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

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/**
 * Throws 403 CROSS_SITE_REQUEST for a state-changing request whose `Origin` is neither PUBLIC_URL's origin nor
 * the host it was sent to (`Origin: null`, from a sandboxed frame or a privacy redirect, is refused too).
 */
export function checkSameOrigin(req: Request, publicOrigin: string): void {
  if (SAFE.has(req.method)) return;
  const origin = req.get('origin');
  if (origin === undefined || origin === publicOrigin) return;
  const host = hostOf(origin);
  if (host !== undefined && host === req.get('host')) return;
  throw refused(origin);
}

/** The check above as a route step (the mail viewer's sign-in form). */
export const sameOrigin =
  (publicOrigin: string): RequestHandler =>
  (req, _res, next) => {
    checkSameOrigin(req, publicOrigin);
    next();
  };

export const originOf = (publicUrl: string): string => new URL(publicUrl).origin;
