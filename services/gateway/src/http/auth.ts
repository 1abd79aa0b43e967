import type { Request, RequestHandler, Response } from 'express';
import type { Client } from '@connectrpc/connect';
import { AppError, forbidden, unauthorized } from '@svc/lib/errors';
import { SingleFlight } from '@svc/lib/single-flight';
import { type IdentityService, KeyType } from '@svc/proto/svc/identity/v1/identity_pb';
import type { KeyCache, KeyIdentity } from './key-cache.js';
import { checkSameOrigin, originOf } from './same-origin.js';

declare module 'express-serve-static-core' {
  interface Request {
    projectId: string;
    userId: string;
    sessionToken: string;
  }
}

export const SESSION_COOKIE = 'svc_session';
/** With the session cookie, selects the project of an API route (the console). */
export const PROJECT_HEADER = 'x-project-id';
const SESSION_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

export type KeyKind = 'secret' | 'public';

const WRONG_KIND: Record<KeyKind, string> = {
  secret: 'This endpoint requires a secret key (sk_*). Public keys (pk_*) are only accepted by /v1/track.',
  public: 'This endpoint requires a public (pk_*) or secret (sk_*) key.',
};

function bearer(req: Request): string | null {
  const header = req.get('authorization');
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}

export class Authenticator {
  /** One identity lookup per key at a time: the requests that find it expired together share it. */
  private readonly resolving = new SingleFlight<KeyIdentity>();
  private readonly secureCookies: boolean;
  /** PUBLIC_URL's origin: a signed-in change must come from it (or from the host it was sent to). */
  readonly publicOrigin: string;

  constructor(
    private readonly identity: Client<typeof IdentityService>,
    private readonly cache: KeyCache,
    publicUrl: string,
  ) {
    this.secureCookies = publicUrl.startsWith('https:');
    this.publicOrigin = originOf(publicUrl);
  }

  /** A deleted project's keys (or rotated ones) answer 401 from now on, not after the cache's TTL. */
  forgetProject(projectId: string): Promise<void> {
    this.resolving.forget();
    return this.cache.forgetProject(projectId);
  }

  private async resolve(key: string): Promise<KeyIdentity> {
    const cached = await this.cache.get(key);
    if (cached) return cached;
    return this.resolving.run(key, () => this.verify(key));
  }

  private async verify(key: string): Promise<KeyIdentity> {
    const mark = this.cache.mark();
    const r = await this.identity.verifyApiKey({ key });
    const found: KeyIdentity = {
      projectId: r.projectId,
      kind: r.keyType === KeyType.SECRET ? 'secret' : 'public',
      disabled: r.projectDisabled,
    };
    // Not cached when a rotation or deletion was heard meanwhile: identity may have answered before it.
    await this.cache.set(key, found, mark);
    return found;
  }

  /**
   * API-key routes: the project comes from the key, and the key type must match the route.
   * `public` routes (/v1/track) take the secret key too (DESIGN.md): server-side clients such as
   * Plunk's Node library hold only the secret key; a public key never opens a secret route.
   */
  key(kind: KeyKind): RequestHandler {
    const accepts = (k: KeyKind) => k === kind || (kind === 'public' && k === 'secret');
    return async (req, _res, next) => {
      const key = bearer(req);
      const consoleProject = req.get(PROJECT_HEADER);
      if (key === null && consoleProject !== undefined) {
        await this.sessionProject(req, consoleProject);
        return next();
      }
      if (key === null)
        throw unauthorized('INVALID_API_KEY', 'Missing Authorization header. Send "Authorization: Bearer <API_KEY>".');
      if (!key)
        throw unauthorized(
          'INVALID_API_KEY',
          'Malformed Authorization header. Send "Authorization: Bearer <API_KEY>".',
        );
      const keyKind = key.startsWith('sk_') ? 'secret' : key.startsWith('pk_') ? 'public' : null;
      if (keyKind && !accepts(keyKind)) throw unauthorized('INVALID_API_KEY', WRONG_KIND[kind]);
      const found = await this.resolve(key);
      if (!accepts(found.kind)) throw unauthorized('INVALID_API_KEY', WRONG_KIND[kind]);
      if (found.disabled) throw forbidden('This project is disabled', 'PROJECT_DISABLED');
      req.projectId = found.projectId;
      next();
    };
  }

  /** Dashboard routes: the signed session cookie. */
  session(): RequestHandler {
    return async (req, _res, next) => {
      await this.signedInUser(req);
      next();
    };
  }

  /** The session's user; a change another site's page sent with the cookie is a 403 (http/same-origin.ts). */
  private async signedInUser(req: Request): Promise<void> {
    const token = req.signedCookies?.[SESSION_COOKIE];
    if (typeof token !== 'string' || !token) throw unauthorized('UNAUTHORIZED', 'Not signed in');
    checkSameOrigin(req, this.publicOrigin);
    const r = await this.identity.getSession({ sessionToken: token }).catch((err) => {
      throw err instanceof AppError && err.status === 401
        ? unauthorized('UNAUTHORIZED', 'Session expired; sign in again')
        : err;
    });
    req.userId = r.user!.id;
    req.sessionToken = token;
  }

  /**
   * The console calls the same API routes as integrations, signed in instead of holding a key: the session
   * cookie plus `X-Project-Id` naming one of the user's projects (a project the user is not a member of is a
   * 404). A custom header cannot be sent cross-site without a CORS preflight the gateway never grants, so a
   * cookie alone (a forged form or link) opens nothing.
   */
  private async sessionProject(req: Request, projectId: string): Promise<void> {
    await this.signedInUser(req);
    const { project } = await this.identity.getProject({ userId: req.userId, projectId });
    if (project!.disabled) throw forbidden('This project is disabled', 'PROJECT_DISABLED');
    req.projectId = project!.id;
  }

  setSession(res: Response, token: string): void {
    res.cookie(SESSION_COOKIE, token, {
      signed: true,
      httpOnly: true,
      sameSite: 'lax',
      secure: this.secureCookies,
      maxAge: SESSION_MAX_AGE_MS,
      path: '/',
    });
  }

  clearSession(res: Response): void {
    res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: this.secureCookies });
  }
}
