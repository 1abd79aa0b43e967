import { validationError } from '@svc/lib/errors';
import { isJsonObject } from '@svc/lib/json-object';

// SPEC.md "Custom data (data) rules": how a `data` payload patches a contact.

/** Rule 6: silently dropped from any top-level `data` payload. */
export const RESERVED_DATA_KEYS: readonly string[] = [
  'id',
  'svc_id',
  'svc_email',
  'email',
  'unsubscribeUrl',
  'subscribeUrl',
  'manageUrl',
];

const MAX_KEY_LENGTH = 255;
const MAX_DEPTH = 10;
const MAX_PAYLOAD_BYTES = 64 * 1024;

type DataObject = Record<string, unknown>;

export interface DataPatch {
  /** Values to store; `null` marks a key to delete. */
  patch: DataObject;
  /** Rule 5: `{value, persistent: false}` values, for this send/event only. */
  oneOff: DataObject;
}

/** A plain object (lib/json-object's test, under the name this module's callers use). */
export const isPlainObject: (value: unknown) => value is DataObject = isJsonObject;

/**
 * Splits a request's `data` into the stored patch and one-off values.
 * An absent `data` (undefined) is an empty patch; anything else but an object is a 422.
 */
export function splitDataPatch(input: unknown): DataPatch {
  if (input === undefined) return { patch: {}, oneOff: {} };
  if (!isPlainObject(input)) {
    throw validationError([
      { field: 'data', message: 'data must be an object', code: 'invalid_type', received: kindOf(input) },
    ]);
  }
  checkDataLimits(input);
  const top: DataObject = {};
  for (const [key, value] of Object.entries(input)) {
    if (!RESERVED_DATA_KEYS.includes(key)) setOwn(top, key, value);
  }
  return splitObject(top);
}

function splitObject(source: DataObject): DataPatch {
  const patch: DataObject = {};
  const oneOff: DataObject = {};
  for (const [key, entry] of Object.entries(source)) {
    let raw = entry;
    if (isValueWrapper(raw)) {
      if (!raw.persistent) {
        setOwn(oneOff, key, raw.value);
        continue;
      }
      raw = raw.value;
    }
    if (isPlainObject(raw)) {
      // A nested object is itself a patch of the stored nested object (rules 1-4 apply per level).
      const nested = splitObject(raw);
      const emptiedByRules = Object.keys(nested.patch).length === 0 && Object.keys(raw).length > 0;
      if (!emptiedByRules) setOwn(patch, key, nested.patch);
      if (Object.keys(nested.oneOff).length > 0) setOwn(oneOff, key, nested.oneOff);
    } else if (raw !== '' && raw !== undefined) {
      setOwn(patch, key, raw); // rule 4: an empty string never overwrites; null stays as the deletion marker
    }
  }
  return { patch, oneOff };
}

// Only an object whose keys are exactly `value` and a boolean `persistent` is a wrapper, so a
// stored object that merely has a `value` key is kept as sent.
function isValueWrapper(raw: unknown): raw is { value: unknown; persistent: boolean } {
  if (!isPlainObject(raw) || !('value' in raw) || typeof raw.persistent !== 'boolean') return false;
  return Object.keys(raw).length === 2;
}

/**
 * The 64 KiB, key length and depth rules (422 `too_big`); CSV import applies them per row and
 * keeps the answer, `data` serialized, for its insert.
 */
export function checkDataLimits(data: DataObject): string {
  const json = checkDataSize(data);
  walkLimits(data, 1);
  return json;
}

/**
 * checkDataLimits for data whose keys and depth are known to obey the rules (a CSV row whose header's
 * columns all pass `pathWithinLimits`): only the size is left to check.
 */
export function checkDataSize(data: DataObject): string {
  const json = JSON.stringify(data);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: most payloads need no byte count.
  const bytes = json.length * 3 <= MAX_PAYLOAD_BYTES ? json.length : Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw tooBig(`data must be at most ${MAX_PAYLOAD_BYTES} bytes when serialized (got ${bytes})`);
  }
  return json;
}

/** Whether keys nested along `path` (a CSV column's dotted name) obey the key length, NUL and depth rules. */
export const pathWithinLimits = (path: string[]): boolean =>
  path.length <= MAX_DEPTH && path.every((key) => key.length <= MAX_KEY_LENGTH && !key.includes(NUL));

// Arrays count as a nesting level too, so a deep structure cannot hide inside one.
function walkLimits(node: unknown, depth: number): void {
  if (typeof node === 'string' && node.includes(NUL)) throw nulInData();
  if (Array.isArray(node)) {
    if (depth > MAX_DEPTH) throw tooBig(`data must not nest deeper than ${MAX_DEPTH} levels`);
    for (const item of node) walkLimits(item, depth + 1);
    return;
  }
  if (!isPlainObject(node)) return;
  if (depth > MAX_DEPTH) throw tooBig(`data must not nest deeper than ${MAX_DEPTH} levels`);
  for (const [key, value] of Object.entries(node)) {
    if (key.includes(NUL)) throw nulInData();
    if (key === '') throw emptyKey();
    if (key.length > MAX_KEY_LENGTH) {
      throw tooBig(`data keys must be at most ${MAX_KEY_LENGTH} characters (key starting "${key.slice(0, 32)}")`);
    }
    walkLimits(value, depth + 1);
  }
}

const tooBig = (message: string) => validationError([{ field: 'data', message, code: 'too_big' }]);

// PostgreSQL's jsonb cannot hold U+0000 (in keys or strings): refused here rather than failing the write.
const NUL = '\u0000';
const nulInData = () =>
  validationError([
    { field: 'data', message: 'data must not contain the NUL character (U+0000)', code: 'invalid_string' },
  ]);

// An empty key has no field name (`data.` addresses nothing): GET /contacts/fields would list a field that no
// filter, values or DELETE request can name.
const emptyKey = () =>
  validationError([{ field: 'data', message: 'data keys must not be empty', code: 'invalid_string' }]);

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

/** Merges a patch into stored data: null deletes, objects merge per key, anything else replaces. */
export function applyDataPatch(existing: DataObject, patch: DataObject): { data: DataObject; changed: boolean } {
  const data: DataObject = { ...existing };
  let changed = false;
  for (const [key, value] of Object.entries(patch)) {
    const current = Object.hasOwn(data, key) ? data[key] : undefined;
    if (value === null) {
      if (Object.hasOwn(data, key)) {
        delete data[key];
        changed = true;
      }
    } else if (isPlainObject(value)) {
      const base = isPlainObject(current) ? current : {};
      const merged = applyDataPatch(base, value);
      // Deleting keys of an object that is not there changes nothing and creates nothing.
      if (!isPlainObject(current) && Object.keys(merged.data).length === 0 && Object.keys(value).length > 0) continue;
      setOwn(data, key, merged.data);
      changed ||= merged.changed || !isPlainObject(current);
    } else if (!deepEqual(current, value)) {
      setOwn(data, key, value);
      changed = true;
    }
  }
  return { data, changed };
}

// defineProperty, not assignment: a `__proto__` key in JSON input must stay a key, not become a prototype.
function setOwn(node: DataObject, key: string, value: unknown): void {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}
