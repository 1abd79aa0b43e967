import { type DescField, type DescMessage, ScalarType } from '@bufbuild/protobuf';
import { z } from 'zod';

const LONG = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);
const FLOAT = new Set([ScalarType.DOUBLE, ScalarType.FLOAT]);

function scalar(t: ScalarType): z.ZodTypeAny {
  if (t === ScalarType.STRING) return z.string();
  if (t === ScalarType.BOOL) return z.boolean();
  if (t === ScalarType.BYTES) return z.string().openapi({ format: 'byte' });
  // proto3 JSON writes 64-bit integers as strings.
  if (LONG.has(t)) return z.string().openapi({ format: 'int64' });
  return FLOAT.has(t) ? z.number() : z.number().int();
}

function message(desc: DescMessage, depth: number): z.ZodTypeAny {
  switch (desc.typeName) {
    case 'google.protobuf.Timestamp':
      return z.string().datetime();
    case 'google.protobuf.Struct':
      return z.record(z.unknown());
    case 'google.protobuf.Value':
      return z.unknown();
  }
  return depth > 3 ? z.record(z.unknown()) : protoJsonSchema(desc, depth + 1);
}

function field(f: DescField, depth: number): z.ZodTypeAny {
  switch (f.fieldKind) {
    case 'scalar':
      return scalar(f.scalar);
    case 'enum':
      return z.string().openapi({ enum: f.enum.values.map((v) => v.name) });
    case 'message':
      return message(f.message, depth);
    case 'list':
      return z.array(
        f.listKind === 'message' ? message(f.message, depth) : f.listKind === 'enum' ? z.string() : scalar(f.scalar),
      );
    case 'map':
      return z.record(
        f.mapKind === 'message' ? message(f.message, depth) : f.mapKind === 'enum' ? z.string() : scalar(f.scalar),
      );
  }
}

/**
 * The zod schema of a message's proto3 JSON as `toJson(schema, m, {alwaysEmitImplicit: true})` writes it:
 * for answers that are the message itself (workflows), so the document follows the .proto contract.
 * Message fields and `optional` fields are absent when unset.
 */
export function protoJsonSchema(desc: DescMessage, depth = 0): z.AnyZodObject {
  const shape: Record<string, z.ZodTypeAny> = {};
  for (const f of desc.fields) {
    const s = field(f, depth);
    shape[f.jsonName] = f.fieldKind === 'message' || f.proto.proto3Optional ? s.optional() : s;
  }
  return z.object(shape);
}
