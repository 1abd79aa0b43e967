import { validationError } from '@svc/lib/errors';

/**
 * Request bodies must be JSON objects: no body reads as an empty object, an array is a 422 (it used to read as `{}`,
 * so `POST /campaigns/{id}/send` with `[{"scheduledFor": ...}]` sent the campaign at once).
 */
export function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body === 'object' && !Array.isArray(body) && !Buffer.isBuffer(body))
    return body as Record<string, unknown>;
  throw validationError([
    {
      field: 'body',
      message: 'The body must be a JSON object',
      code: 'invalid_type',
      received: Array.isArray(body) ? 'array' : typeof body,
    },
  ]);
}

/**
 * Reads an optional string field for an RPC request: wrong JSON types are a 422 here,
 * because protobuf fields cannot carry them to the service's own validation.
 */
export function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') {
    throw validationError([
      {
        field: name,
        message: `Expected string, received ${Array.isArray(v) ? 'array' : typeof v}`,
        code: 'invalid_type',
        received: v,
      },
    ]);
  }
  return v;
}

export function boolField(body: Record<string, unknown>, name: string): boolean | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') {
    throw validationError([
      {
        field: name,
        message: `Expected boolean, received ${Array.isArray(v) ? 'array' : typeof v}`,
        code: 'invalid_type',
        received: v,
      },
    ]);
  }
  return v;
}
