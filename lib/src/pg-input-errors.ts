import { AppError } from './errors.js';

// PostgreSQL "data exception" SQLSTATEs that only a request's own values can cause: they are the
// caller's mistake (a 4xx), not the service's. The gateway refuses most of these before any RPC;
// this keeps direct gRPC callers from turning them into 500s.
const MESSAGES: Record<string, string> = {
  '22021': 'Text must not contain the NUL character (U+0000) or invalid UTF-8', // character_not_in_repertoire
  '22P05': 'Text must not contain the NUL character (U+0000)', // untranslatable_character (jsonb "\u0000")
  '22003': 'A number is out of range', // numeric_value_out_of_range
  '22008': 'A date or time is out of range', // datetime_field_overflow
  '22P02': 'A value has the wrong format', // invalid_text_representation
};

/** The 400 a value-caused PostgreSQL error stands for; undefined for every other error. */
export function databaseInputError(err: unknown): AppError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  const message = typeof code === 'string' ? MESSAGES[code] : undefined;
  return message === undefined
    ? undefined
    : new AppError({ code: 'BAD_REQUEST', status: 400, message, details: { sqlState: code } });
}
