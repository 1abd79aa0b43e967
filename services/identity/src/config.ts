import { z } from 'zod';
import { envPort, envPositiveInt, envUrl, type Config } from '@svc/lib/config';

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
  })
  .transform((e) => ({
    accountSmtpUrl: e.SMTP_URL ?? `smtp://127.0.0.1:${e.EMBEDDED_SMTP_PORT}?tls=off`,
    systemFrom: e.SYSTEM_FROM,
    verificationTtlSeconds: e.EMAIL_VERIFICATION_TTL_SECONDS,
    resetTtlSeconds: e.PASSWORD_RESET_TTL_SECONDS,
  }));

export type IdentityEnv = z.output<typeof identityEnv>;
export type IdentityConfig = Config & IdentityEnv;
