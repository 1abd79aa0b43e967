import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';

/** Raw `data` for the contacts service, which applies the custom-data rules (and rejects non-objects). */
export const dataValue = (body: Record<string, unknown>) =>
  body.data === undefined ? undefined : fromJson(ValueSchema, body.data as JsonValue);
