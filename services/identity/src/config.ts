import { z } from 'zod';
import { envPort, envPositiveInt, envUrl, type Config } from '@svc/lib/config';
import type { OAuthProviderConfig } from './domain/oauth.js';

const secret = z.string().min(1).optional();

/** The identity service's own environment variables: the account mail (verification, password reset). */
export const identityEnv = z
  .object({
    /** SMTP relay of account mail (the same variable messaging relays through); unset: the local sink. */
    SMTP_URL: envUrl.optional(),
    /** The local sink's port (messaging's EMBEDDED_SMTP_PORT) when SMTP_URL is unset. */
    EMBEDDED_SMTP_PORT: envPort.default(2525),
    /** Sender of account mail; default no-reply@ the PUBLIC_URL host. */
    SYSTEM_FROM: z.string().email().optional(),
    EMAIL_VERIFICATION_TTL_SECONDS: envPositiveInt.default(24 * 3600),
    PASSWORD_RESET_TTL_SECONDS: envPositiveInt.default(3600),
    /** OAuth sign-in (README "Sign-in with GitHub or Google"): a provider is offered when both are set. */
    GITHUB_CLIENT_ID: secret,
    GITHUB_CLIENT_SECRET: secret,
    GOOGLE_CLIENT_ID: secret,
    GOOGLE_CLIENT_SECRET: secret,
    /** The providers' endpoints: the public ones by default (a test points them at its own provider). */
    OAUTH_GITHUB_AUTHORIZE_URL: envUrl.default('https://github.com/login/oauth/authorize'),
    OAUTH_GITHUB_TOKEN_URL: envUrl.default('https://github.com/login/oauth/access_token'),
    OAUTH_GITHUB_EMAILS_URL: envUrl.default('https://api.github.com/user/emails'),
    OAUTH_GOOGLE_AUTHORIZE_URL: envUrl.default('https://accounts.google.com/o/oauth2/v2/auth'),
    OAUTH_GOOGLE_TOKEN_URL: envUrl.default('https://oauth2.googleapis.com/token'),
    OAUTH_GOOGLE_USERINFO_URL: envUrl.default('https://openidconnect.googleapis.com/v1/userinfo'),
  })
  .transform((e) => ({
    accountSmtpUrl: e.SMTP_URL ?? `smtp://127.0.0.1:${e.EMBEDDED_SMTP_PORT}?tls=off`,
    systemFrom: e.SYSTEM_FROM,
    verificationTtlSeconds: e.EMAIL_VERIFICATION_TTL_SECONDS,
    resetTtlSeconds: e.PASSWORD_RESET_TTL_SECONDS,
    oauthProviders: [
      e.GITHUB_CLIENT_ID && e.GITHUB_CLIENT_SECRET
        ? {
            id: 'github',
            name: 'GitHub',
            clientId: e.GITHUB_CLIENT_ID,
            clientSecret: e.GITHUB_CLIENT_SECRET,
            authorizeUrl: e.OAUTH_GITHUB_AUTHORIZE_URL,
            tokenUrl: e.OAUTH_GITHUB_TOKEN_URL,
            emailUrl: e.OAUTH_GITHUB_EMAILS_URL,
            scope: 'read:user user:email',
          }
        : null,
      e.GOOGLE_CLIENT_ID && e.GOOGLE_CLIENT_SECRET
        ? {
            id: 'google',
            name: 'Google',
            clientId: e.GOOGLE_CLIENT_ID,
            clientSecret: e.GOOGLE_CLIENT_SECRET,
            authorizeUrl: e.OAUTH_GOOGLE_AUTHORIZE_URL,
            tokenUrl: e.OAUTH_GOOGLE_TOKEN_URL,
            emailUrl: e.OAUTH_GOOGLE_USERINFO_URL,
            scope: 'openid email',
          }
        : null,
    ].filter((p): p is OAuthProviderConfig => p !== null),
  }));

export type IdentityEnv = z.output<typeof identityEnv>;
export type IdentityConfig = Config & IdentityEnv;
