import { z } from 'zod';

// Sizes of caller-written message content (templates and POST /v1/send), checked by the
// request schemas before anything parses or renders the text.

/** RFC 5322's line limit: a subject is one header line (SPEC.md: 1 to 998 characters). */
export const MAX_SUBJECT_CHARS = 998;
/** A template or /v1/send body, in UTF-8 bytes (Gmail clips messages past about 100 KB). */
export const MAX_BODY_BYTES = 512 * 1024;

/** UTF-8 size, without encoding the whole string when its length alone settles it. */
export function exceedsBytes(text: string, max: number): boolean {
  // A UTF-16 code unit is at least one UTF-8 byte and at most three.
  if (text.length > max) return true;
  return text.length * 3 > max && Buffer.byteLength(text) > max;
}

/** A message body: HTML with Liquid, 1 byte to MAX_BODY_BYTES. */
export const bodySchema = z
  .string()
  .min(1)
  .refine((s) => !exceedsBytes(s, MAX_BODY_BYTES), {
    message: `Body must be at most ${MAX_BODY_BYTES} bytes (512 KiB) of UTF-8`,
    params: { code: 'too_big' },
  });
