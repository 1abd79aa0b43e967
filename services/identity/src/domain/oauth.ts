import { createHash, randomBytes } from 'node:crypto';
import { AppError, notFound } from '@svc/lib/errors';
import type { UserRow } from '../store/identity-store.js';
import type { AccountSecured, Identity } from './identity.js';

/** How long the identity service waits for a provider's token or user endpoint. */
const PROVIDER_TIMEOUT_MS = 10_000;

export type OAuthProviderId = 'github' | 'google';

export interface OAuthProviderConfig {
  id: OAuthProviderId;
  name: string;
  clientId: string;
  clientSecret: string;
  authorizeUrl: string;
  tokenUrl: string;
  /** GitHub: the /user/emails list; Google: the OpenID userinfo endpoint. */
  emailUrl: string;
  scope: string;
}

export interface OAuthStart {
  authorizeUrl: string;
  state: string;
  codeVerifier: string;
}

const random = () => randomBytes(32).toString('base64url');

const providerError = (message: string) => new AppError({ code: 'OAUTH_PROVIDER_ERROR', status: 502, message });

async function providerJson(url: string, init: RequestInit, what: string): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS), redirect: 'error' });
  } catch (err) {
    throw providerError(`The provider's ${what} endpoint is unreachable: ${(err as Error).message}`);
  }
  const body: unknown = await res.json().catch(() => null);
  const obj = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  // GitHub answers a refused code with 200 and {error}; others with 400/401.
  if (!res.ok || typeof obj.error === 'string') {
    const reason = typeof obj.error === 'string' ? obj.error : `HTTP ${res.status}`;
    const detail = typeof obj.error_description === 'string' ? `: ${obj.error_description}` : '';
    throw providerError(`The provider's ${what} endpoint refused the request (${reason}${detail})`);
  }
  return Array.isArray(body) ? { list: body } : obj;
}

/** The verified address the provider vouches for, or a 403 OAUTH_EMAIL_UNVERIFIED. */
function verifiedEmail(provider: OAuthProviderId, info: Record<string, unknown>): string {
  const unverified = new AppError({
    code: 'OAUTH_EMAIL_UNVERIFIED',
    status: 403,
    message: 'The provider does not report a verified email address for this account',
  });
  if (provider === 'github') {
    const list = Array.isArray(info.list) ? (info.list as Record<string, unknown>[]) : [];
    const primary = list.find((e) => e && e.primary === true);
    if (!primary || primary.verified !== true || typeof primary.email !== 'string') throw unverified;
    return primary.email;
  }
  if (info.email_verified !== true || typeof info.email !== 'string') throw unverified;
  return info.email;
}

/**
 * OAuth 2.0 sign-in, authorization code flow with PKCE (S256). The caller keeps `state` and the code
 * verifier bound to the browser between `start` and `complete` and checks `state` itself.
 */
export class OAuth {
  private readonly providers: Map<string, OAuthProviderConfig>;

  constructor(
    private readonly identity: Identity,
    providers: OAuthProviderConfig[],
    private readonly publicUrl: string,
  ) {
    this.providers = new Map(providers.map((p) => [p.id, p]));
  }

  list(): { id: string; name: string }[] {
    return [...this.providers.values()].map((p) => ({ id: p.id, name: p.name }));
  }

  private provider(id: string): OAuthProviderConfig {
    const p = this.providers.get(id);
    if (!p) throw notFound('OAuth provider', id, 'OAUTH_PROVIDER_NOT_FOUND');
    return p;
  }

  /** Where the provider sends the browser back: the gateway's callback route. */
  redirectUri(id: string): string {
    return new URL(`/auth/oauth/${id}/callback`, this.publicUrl).toString();
  }

  start(providerId: string): OAuthStart {
    const p = this.provider(providerId);
    const state = random();
    const codeVerifier = random();
    const url = new URL(p.authorizeUrl);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: p.clientId,
      redirect_uri: this.redirectUri(p.id),
      scope: p.scope,
      state,
      code_challenge: createHash('sha256').update(codeVerifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    return { authorizeUrl: url.toString(), state, codeVerifier };
  }

  async complete(
    providerId: string,
    code: string,
    codeVerifier: string,
  ): Promise<{ user: UserRow; sessionToken: string; created: boolean; provider: string; secured?: AccountSecured }> {
    const p = this.provider(providerId);
    if (!code || !codeVerifier) throw providerError('The provider sent no authorization code');
    const token = await providerJson(
      p.tokenUrl,
      {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: this.redirectUri(p.id),
          client_id: p.clientId,
          client_secret: p.clientSecret,
          code_verifier: codeVerifier,
        }).toString(),
      },
      'token',
    );
    if (typeof token.access_token !== 'string') throw providerError('The provider issued no access token');
    const info = await providerJson(
      p.emailUrl,
      {
        headers: {
          accept: p.id === 'github' ? 'application/vnd.github+json' : 'application/json',
          authorization: `Bearer ${token.access_token}`,
          // GitHub's API refuses requests without one.
          'user-agent': 'svc-oauth',
        },
      },
      'user',
    );
    return { ...(await this.identity.signInVerifiedEmail(verifiedEmail(p.id, info))), provider: p.name };
  }
}
