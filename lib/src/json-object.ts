import { z } from 'zod';

// User data objects (custom data, template variables, custom headers) as sent. zod's z.record and a passthrough
// z.object build a new object and never copy a `__proto__` key into it, so such a key would vanish silently, where
// the contacts service keeps it as an ordinary key (custom-data.ts). This schema passes the object itself on.

/** A plain object, as JSON.parse or a google.protobuf.Struct gives one. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A JSON object, unchanged: every key kept, `__proto__` included (422 `invalid_type` for anything else). */
export const jsonObject = () =>
  z.custom<Record<string, unknown>>(isJsonObject, { message: 'Expected object', params: { code: 'invalid_type' } });
