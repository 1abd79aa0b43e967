import { timingSafeEqual } from 'node:crypto';
import type { Client } from '@connectrpc/connect';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { isAppError, notFound } from '@svc/lib/errors';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { ApiRouter } from '../http/api.js';
import type { Authenticator } from '../http/auth.js';

/** The state and PKCE verifier of one sign-in, bound to the browser that started it. */
const STATE_COOKIE = 'svc_oauth';
const STATE_PATH = '/auth/oauth';
const STATE_TTL_MS = 10 * 60 * 1000;

/** Identity's error codes of a failed callback -> the `error` the login page shows. */
const CALLBACK_ERRORS: Record<string, string> = {
  OAUTH_PROVIDER_ERROR: 'oauth_provider',
  OAUTH_EMAIL_UNVERIFIED: 'oauth_email_unverified',
  // The provider's address is not one an account can have (lib/email-syntax).
  VALIDATION_ERROR: 'oauth_email_invalid',
  SIGNUP_DISABLED: 'signup_disabled',
};

const PROVIDER = z.object({ provider: z.string().openapi({ description: 'Provider id: github or google' }) });
const REDIRECT = (to: string) => ({ description: `Redirect ${to}`, headers: { Location: 'Where to go' } });

interface SavedState {
  provider: string;
  state: string;
  verifier: string;
  expires: number;
}

function savedState(req: Request): SavedState | null {
  const raw: unknown = req.signedCookies?.[STATE_COOKIE];
  if (typeof raw !== 'string') return null;
  try {
    const v = JSON.parse(raw) as SavedState;
    return typeof v.state === 'string' && typeof v.verifier === 'string' && v.expires > Date.now() ? v : null;
  } catch {
    return null;
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const toLogin = (res: Response, error: string) => res.redirect(302, `/app/login?error=${encodeURIComponent(error)}`);

/**
 * Sign-in with an OAuth provider (README "Sign-in with GitHub or Google"): authorization code flow with PKCE.
 * The state and code verifier travel in a short-lived cookie signed with SESSION_SECRET; a failed callback
 * redirects to the console's login page with `?error=<code>`.
 */
export function oauthRouter(identity: Client<typeof IdentityService>, auth: Authenticator, publicUrl: string): Router {
  const r = new ApiRouter();
  const cookie = {
    signed: true,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: publicUrl.startsWith('https:'),
    path: STATE_PATH,
  };

  r.get(
    '/auth/oauth/:provider',
    {
      summary: 'Start signing in with an OAuth provider: redirects to it',
      tag: 'Account',
      auth: 'none',
      params: PROVIDER,
      responses: { 302: REDIRECT("to the provider's authorization page") },
      errors: [404],
    },
    async (req, res) => {
      const provider = String(req.params.provider);
      const out = await identity.startOAuth({ provider });
      const saved: SavedState = {
        provider,
        state: out.state,
        verifier: out.codeVerifier,
        expires: Date.now() + STATE_TTL_MS,
      };
      res.cookie(STATE_COOKIE, JSON.stringify(saved), { ...cookie, maxAge: STATE_TTL_MS });
      res.redirect(302, out.authorizeUrl);
    },
  );

  r.get(
    '/auth/oauth/:provider/callback',
    {
      summary: 'Where the provider sends the browser back: signs in and redirects to /app',
      description:
        'Failures redirect to /app/login?error=<code>: oauth_state (missing, forged or expired state), ' +
        'oauth_denied (the user declined), oauth_provider (the provider refused the code or failed), ' +
        'oauth_email_unverified (no verified address), oauth_email_invalid (an address no account can have), ' +
        'signup_disabled.',
      tag: 'Account',
      auth: 'none',
      params: PROVIDER,
      query: z.object({
        code: z.string().optional(),
        state: z.string().optional(),
        error: z.string().optional(),
      }),
      responses: { 302: REDIRECT('to /app when signed in, else to /app/login?error=<code>') },
      errors: [404],
    },
    async (req, res) => {
      const provider = String(req.params.provider);
      const { providers } = await identity.getOAuthConfig({});
      if (!providers.some((p) => p.id === provider))
        throw notFound('OAuth provider', provider, 'OAUTH_PROVIDER_NOT_FOUND');
      const saved = savedState(req);
      // Single use: whatever happens next, this browser's state is spent.
      res.clearCookie(STATE_COOKIE, cookie);
      if (typeof req.query.error === 'string') {
        return toLogin(res, req.query.error === 'access_denied' ? 'oauth_denied' : 'oauth_provider');
      }
      const state = typeof req.query.state === 'string' ? req.query.state : '';
      if (!saved || saved.provider !== provider || !state || !sameText(state, saved.state)) {
        return toLogin(res, 'oauth_state');
      }
      const code = typeof req.query.code === 'string' ? req.query.code : '';
      try {
        const out = await identity.completeOAuth({ provider, code, codeVerifier: saved.verifier });
        auth.setSession(res, out.sessionToken);
      } catch (err) {
        const mapped = isAppError(err) ? CALLBACK_ERRORS[err.code] : undefined;
        if (mapped) return toLogin(res, mapped);
        throw err;
      }
      res.redirect(302, '/app');
    },
  );

  return r.router;
}
