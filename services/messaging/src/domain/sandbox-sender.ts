import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { AppError } from '@svc/lib/errors';
import type { Pool } from '@svc/lib/db';
import { settingOnce } from '../store/settings-store.js';
import { domainOf } from './address.js';

// Embedded mode's sandbox sender: with the local SMTP sink (no SMTP_URL) and no DATABASE_URL,
// every project may send from any address at sandbox.localhost without verifying a domain. The
// mail is DKIM-signed with a key kept in messaging's settings and can only reach the local sink:
// the sandbox exists only when the transport is that sink. Anywhere else the address is a 403,
// and a sandbox email left queued from an earlier embedded run is failed, never relayed.

/** `.localhost` names are reserved (RFC 6761): no real mailbox or DNS zone can own them. */
export const SANDBOX_DOMAIN = 'sandbox.localhost';
export const SANDBOX_SENDER = `sandbox@${SANDBOX_DOMAIN}`;
export const SANDBOX_SELECTOR = 'sandbox';

export interface SandboxSender {
  domain: string;
  selector: string;
  /** PKCS#8 PEM. */
  privateKey: string;
  /** Base64 SubjectPublicKeyInfo, as a DKIM TXT record's p= carries it. */
  publicKey: string;
}

export function isSandboxAddress(email: string): boolean {
  return domainOf(email) === SANDBOX_DOMAIN;
}

/** The sandbox's DKIM key, created once per database (the first replica to ask creates it). */
export async function loadSandboxSender(pool: Pool): Promise<SandboxSender> {
  const privateKey = await settingOnce(pool, 'sandbox_dkim_private_key', () =>
    generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  );
  const publicKey = createPublicKey(privateKey).export({ type: 'spki', format: 'der' }).toString('base64');
  return { domain: SANDBOX_DOMAIN, selector: SANDBOX_SELECTOR, privateKey, publicKey };
}

/** Sending from the sandbox where it does not exist: distributed mode, or SMTP_URL set. */
export function sandboxUnavailable(): AppError {
  return new AppError({
    code: 'INTERNAL_SERVER_ERROR',
    status: 403,
    message:
      `${SANDBOX_SENDER} is the sandbox sender of embedded mode with the local SMTP sink; ` +
      'it cannot send here (distributed mode or SMTP_URL set). Send from a verified domain.',
    details: { reason: 'sandbox_unavailable', domain: SANDBOX_DOMAIN },
    suggestion: 'Add your domain with POST /domains, publish the DNS records it answers, then send from it.',
  });
}

/** A sandbox email dequeued where the sandbox does not exist (the platform restarted with SMTP_URL set). */
export class SandboxRefused extends Error {
  constructor() {
    super(`${SANDBOX_SENDER} mail is delivered only to embedded mode's local SMTP sink; not sent`);
  }
}
