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

/**
 * The variables a template sees: stored data overlaid with one send's or event's one-off values (SPEC.md rule 5),
 * object by object, so `{profile: {code}}` one-off beside a stored `{profile: {tier}}` keeps both. Keys are defined,
 * never assigned: a `__proto__` key stays a key.
 */
export function templateVariables(
  stored: Record<string, unknown>,
  oneOff: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...stored };
  for (const [key, value] of Object.entries(oneOff)) {
    const base = Object.hasOwn(merged, key) ? merged[key] : undefined;
    const next = isJsonObject(base) && isJsonObject(value) ? templateVariables(base, value) : value;
    Object.defineProperty(merged, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return merged;
}
