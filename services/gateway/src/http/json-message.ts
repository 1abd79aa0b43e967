import {
  create,
  fromJson,
  type JsonValue,
  ScalarType,
  type DescEnum,
  type DescField,
  type DescMessage,
  type MessageShape,
} from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { AppError, validationError, type FieldError } from '@svc/lib/errors';

// REST JSON -> RPC request message. The gateway checks JSON types only (a string where a number is
// wanted, an object where a list is), as SPEC.md 422 field errors; every rule of the request is the
// owning service's. Unknown keys are ignored, as the REST API always did.

/** What the walker offers a shape reader: reading a message, and reporting a type mistake. */
export interface JsonReader {
  message(schema: DescMessage, value: unknown, path: string): Record<string, unknown>;
  fail(path: string, message: string, value: unknown, code?: string): undefined;
}

/** Reads a REST shape that is not protobuf JSON (e.g. an address as a string or an object). */
export type ShapeReader = (value: unknown, path: string, reader: JsonReader) => unknown;

export interface JsonMapping {
  /**
   * JSON paths (`a.b`; `*` stands for any list index or map key) where null is accepted: `empty`
   * gives the field's zero value (a text the service clears), `absent` leaves the field unset.
   * Anywhere else null is a type mistake.
   */
  nulls?: Record<string, 'empty' | 'absent'>;
  /** Repeated fields (by path) that also take a single value for a list of one. */
  singleOrList?: string[];
  /** Readers of REST shapes, by message type name (`svc.messaging.v1.Address`). */
  shapes?: Record<string, ShapeReader>;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const STRUCT = 'google.protobuf.Struct';
const VALUE = 'google.protobuf.Value';

export const jsonKind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

export const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const join = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));

function matches(pattern: string, path: string): boolean {
  const p = pattern.split('.');
  const s = path.split('.');
  return p.length === s.length && p.every((seg, i) => seg === '*' || seg === s[i]);
}

const INTEGER_SCALARS = new Set([
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
]);
const LONG_SCALARS = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

/** The zero value of a field (proto3 fields have no declared defaults). */
function zeroOf(field: DescField): unknown {
  if (field.fieldKind === 'list') return [];
  if (field.fieldKind === 'map') return {};
  if (field.fieldKind === 'enum') return 0;
  if (field.fieldKind !== 'scalar') return undefined;
  if (field.scalar === ScalarType.STRING) return '';
  if (field.scalar === ScalarType.BOOL) return false;
  if (field.scalar === ScalarType.BYTES) return new Uint8Array(0);
  return LONG_SCALARS.has(field.scalar) ? 0n : 0;
}

type Element = { scalar: ScalarType } | { enum: DescEnum } | { message: DescMessage };

class Walker implements JsonReader {
  readonly errors: FieldError[] = [];

  constructor(private readonly mapping: JsonMapping) {}

  fail(path: string, message: string, value: unknown, code = 'invalid_type'): undefined {
    this.errors.push({ field: path, message, code, received: jsonKind(value) });
    return undefined;
  }

  private expected(path: string, what: string, value: unknown): undefined {
    return this.fail(path, `Expected ${what}, received ${jsonKind(value)}`, value);
  }

  message(schema: DescMessage, value: unknown, path: string): Record<string, unknown> {
    const init: Record<string, unknown> = {};
    if (!isJsonObject(value)) {
      this.expected(path, 'object', value);
      return init;
    }
    for (const field of schema.fields) {
      if (!Object.hasOwn(value, field.jsonName)) continue;
      const fieldPath = join(path, field.jsonName);
      const read = this.field(field, value[field.jsonName], fieldPath);
      if (read === undefined) continue;
      if (!field.oneof) init[field.localName] = read;
      else if (init[field.oneof.localName] === undefined)
        init[field.oneof.localName] = { case: field.localName, value: read };
      else
        this.fail(
          fieldPath,
          `Only one of ${field.oneof.fields.map((f) => f.jsonName).join(', ')} may be set`,
          value,
          'invalid_union',
        );
    }
    return init;
  }

  private field(field: DescField, value: unknown, path: string): unknown {
    if (value === null) {
      const rule = Object.entries(this.mapping.nulls ?? {}).find(([pattern]) => matches(pattern, path))?.[1];
      if (rule === 'absent' || (rule === 'empty' && field.fieldKind === 'message')) return undefined;
      if (rule === 'empty') return zeroOf(field);
    }
    switch (field.fieldKind) {
      case 'scalar':
        return this.element({ scalar: field.scalar }, value, path);
      case 'enum':
        return this.element({ enum: field.enum }, value, path);
      case 'message':
        return this.element({ message: field.message }, value, path);
      case 'list':
        return this.list(
          field.listKind === 'message'
            ? { message: field.message }
            : field.listKind === 'enum'
              ? { enum: field.enum }
              : { scalar: field.scalar },
          value,
          path,
        );
      case 'map':
        return this.map(
          field.mapKind === 'message'
            ? { message: field.message }
            : field.mapKind === 'enum'
              ? { enum: field.enum }
              : { scalar: field.scalar },
          value,
          path,
        );
    }
  }

  private list(item: Element, value: unknown, path: string): unknown[] | undefined {
    if (!Array.isArray(value)) {
      // The REST convenience of one value for a list of one: its mistakes are named on the field itself.
      if (value !== null && this.mapping.singleOrList?.includes(path)) {
        const one = this.element(item, value, path);
        return one === undefined ? undefined : [one];
      }
      return this.expected(path, 'array', value);
    }
    const out = value.map((v, i) => this.element(item, v, join(path, i)));
    return out.includes(undefined) ? undefined : out;
  }

  private map(item: Element, value: unknown, path: string): Record<string, unknown> | undefined {
    if (!isJsonObject(value)) return this.expected(path, 'object', value);
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      // defineProperty: a `__proto__` key stays a key instead of replacing the prototype.
      Object.defineProperty(out, key, {
        value: this.element(item, v, join(path, key)),
        enumerable: true,
        writable: true,
      });
    }
    return out;
  }

  private element(kind: Element, value: unknown, path: string): unknown {
    if ('message' in kind) {
      const shape = this.mapping.shapes?.[kind.message.typeName];
      if (shape) return shape(value, path, this);
      // A Value field holds a message, not JSON (Struct fields are plain JSON objects in protobuf-es).
      if (kind.message.typeName === VALUE) return fromJson(ValueSchema, value as JsonValue);
      if (kind.message.typeName === STRUCT) return isJsonObject(value) ? value : this.expected(path, 'object', value);
      return this.message(kind.message, value, path);
    }
    if ('enum' in kind) {
      const v = typeof value === 'string' ? kind.enum.values.find((e) => e.name === value) : undefined;
      if (v) return v.number;
      return this.fail(
        path,
        `Expected one of ${kind.enum.values.map((e) => e.name).join(', ')}`,
        value,
        'invalid_enum_value',
      );
    }
    return this.scalar(kind.scalar, value, path);
  }

  private scalar(scalar: ScalarType, value: unknown, path: string): unknown {
    switch (scalar) {
      case ScalarType.STRING:
        return typeof value === 'string' ? value : this.expected(path, 'string', value);
      case ScalarType.BOOL:
        return typeof value === 'boolean' ? value : this.expected(path, 'boolean', value);
      case ScalarType.BYTES: {
        if (typeof value !== 'string') return this.expected(path, 'base64 string', value);
        // Line-wrapped base64 (MIME style) is common, so whitespace is dropped before checking.
        const compact = value.replace(/\s+/g, '');
        if (compact.length % 4 !== 0 || !BASE64.test(compact))
          return this.fail(path, 'Must be base64', value, 'invalid_base64');
        return new Uint8Array(Buffer.from(compact, 'base64'));
      }
      default: {
        if (typeof value !== 'number' || !Number.isFinite(value)) return this.expected(path, 'number', value);
        const integral = INTEGER_SCALARS.has(scalar) || LONG_SCALARS.has(scalar);
        if (integral && !Number.isInteger(value)) return this.expected(path, 'integer', value);
        return LONG_SCALARS.has(scalar) ? BigInt(value) : value;
      }
    }
  }
}

/**
 * The request message for a JSON body (anything but an object reads as `{}`), with `base` fields
 * (project id, path parameters) on top. Every JSON type mistake is reported at once as a 422.
 */
export function messageFromJson<Desc extends DescMessage>(
  schema: Desc,
  body: unknown,
  mapping: JsonMapping = {},
  base: Record<string, unknown> = {},
): MessageShape<Desc> {
  const walker = new Walker(mapping);
  const init = walker.message(schema, isJsonObject(body) ? body : {}, '');
  if (walker.errors.length) throw validationError(walker.errors);
  return create(schema, { ...init, ...base } as never);
}

/**
 * The service names fields of the message (`to.0.email`); a REST body that used the single-value
 * form (`to: "a@b.c"`) hears of `to.email`. Renames `from` (and the fields under it) to `to`.
 */
export function renameErrorFields(err: unknown, from: string, to: string): unknown {
  if (!(err instanceof AppError) || !err.errors?.length) return err;
  const rename = (field: string) => {
    if (field === from) return to;
    if (!field.startsWith(`${from}.`)) return field;
    return join(to, field.slice(from.length + 1));
  };
  return new AppError({ ...err.toJSON(), errors: err.errors.map((e) => ({ ...e, field: rename(e.field) })) });
}
