import type { ZodError, ZodTypeAny, infer as ZodInfer } from 'zod';
import { validationError, type FieldError } from './errors.js';

/** Zod issues map to the envelope's `errors[] = {field: "a.b", message, code, received}`. */
export function fieldErrors(error: ZodError): FieldError[] {
  return error.issues.map((issue) => {
    const received = 'received' in issue ? (issue as { received?: unknown }).received : undefined;
    const code = issue.code === 'custom' && issue.params?.code ? String(issue.params.code) : issue.code;
    return {
      field: issue.path.join('.'),
      message: issue.message,
      code,
      ...(received !== undefined ? { received } : {}),
    };
  });
}

/** Parses or throws the 422 VALIDATION_ERROR the spec asks for. */
export function parseOrThrow<S extends ZodTypeAny>(schema: S, input: unknown): ZodInfer<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(fieldErrors(result.error));
  return result.data;
}
