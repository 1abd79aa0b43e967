import { createPrivateKey, type KeyObject } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { MailMessage } from './smtp-transport.js';

/** A message ready for the wire: the MIME bytes (DKIM-signed when the message names a key) and the SMTP envelope. */
export interface BuiltMessage {
  raw: Buffer;
  envelope: { from: string; to: string[] };
}

// nodemailer's own MIME composer and DKIM signer, writing to a buffer instead of a socket: the bytes are
// exactly what its SMTP transport would have produced, so the relay later sends them unchanged.
const composer = nodemailer.createTransport({ streamTransport: true, buffer: true });

// Decoding a PEM private key costs several times the RSA signature itself under OpenSSL 3, so
// each key is decoded once per thread. Few keys (one per sender domain); the cap bounds a bad day.
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 1000;

function signingKey(pem: string): KeyObject {
  let key = keys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(pem, key);
  }
  return key;
}

/** Builds the MIME message and signs it with its DKIM key, if any (CPU-bound: signing-pool.ts runs it on threads). */
export async function buildMessage(message: MailMessage): Promise<BuiltMessage> {
  const dkim = message.dkim as { domainName: string; keySelector: string; privateKey: string } | undefined;
  const info = await composer.sendMail({
    ...message,
    ...(dkim ? { dkim: { ...dkim, privateKey: signingKey(dkim.privateKey) as unknown as string } } : {}),
  });
  const envelope = info.envelope as { from: string | false; to: string[] };
  return { raw: info.message as Buffer, envelope: { from: envelope.from || '', to: envelope.to } };
}
