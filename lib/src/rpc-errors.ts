import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema, type ErrorInfo, type FieldViolation } from '@svc/proto/svc/common/v1/error_pb';
import { isDependencyUnavailable } from './dependency-errors.js';
import { AppError, internal, serviceUnavailable } from './errors.js';
import { databaseInputError } from './pg-input-errors.js';

const CODE_BY_STATUS: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  402: Code.ResourceExhausted,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  409: Code.AlreadyExists,
  413: Code.InvalidArgument,
  422: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  500: Code.Internal,
  503: Code.Unavailable,
};

const STATUS_BY_CODE: Partial<Record<Code, [number, string]>> = {
  [Code.InvalidArgument]: [400, 'BAD_REQUEST'],
  [Code.Unauthenticated]: [401, 'UNAUTHORIZED'],
  [Code.PermissionDenied]: [403, 'FORBIDDEN'],
  [Code.NotFound]: [404, 'RESOURCE_NOT_FOUND'],
  [Code.AlreadyExists]: [409, 'CONFLICT'],
  [Code.ResourceExhausted]: [429, 'RATE_LIMIT_EXCEEDED'],
};

/**
 * Transport failures: the callee is unreachable, crashed mid-call (reset: Aborted, Canceled),
 * or missed the deadline. All are 503 with Retry-After (a retry may well succeed); the raw
 * message names internal addresses, so it is never passed on.
 */
const UNAVAILABLE_CODES = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Aborted, Code.Canceled]);

/** A stream cut without a gRPC status (the callee's process died): connect-es calls it Internal. */
function isCutStream(ce: ConnectError): boolean {
  if (ce.code !== Code.Internal) return false;
  return isDependencyUnavailable(ce.cause) || /http\/2 stream closed|session/i.test(ce.rawMessage);
}

// Errors travel in HTTP/2 trailers, whose size is limited: an echo of a 200 KB field must not
// turn a 422 into a transport failure (a 500). Long texts are shortened, large values dropped.
const MAX_MESSAGE_LENGTH = 1000;
const MAX_RECEIVED_STRING = 256;
const MAX_RECEIVED_JSON = 1024;

const bounded = (text: string) => (text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH)}…` : text);

function receivedJson(received: unknown): string {
  if (received === undefined) return '';
  const value =
    typeof received === 'string' && received.length > MAX_RECEIVED_STRING
      ? `${received.slice(0, MAX_RECEIVED_STRING)}…`
      : received;
  const json = JSON.stringify(value) ?? '';
  return json.length > MAX_RECEIVED_JSON ? '' : json;
}

/** Any failure as the AppError a client sees (internal errors are never described). */
function asAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  return databaseInputError(err) ?? (isDependencyUnavailable(err) ? serviceUnavailable() : internal());
}

/** A failure as ErrorInfo: the detail of a failed RPC, or one failed item of a batch answer. */
export function errorInfo(err: unknown): ErrorInfo {
  const app = asAppError(err);
  return create(ErrorInfoSchema, {
    code: app.code,
    httpStatus: app.status,
    message: bounded(app.message),
    errors: (app.errors ?? []).map((e) => ({
      field: e.field,
      message: e.message,
      code: e.code,
      receivedJson: receivedJson(e.received),
    })),
    detailsJson: app.details ? JSON.stringify(app.details) : '',
    suggestion: app.suggestion ?? '',
    flat: app.flat,
  });
}

/** Server side: an AppError keeps every field through the wire as an ErrorInfo detail. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const app = asAppError(err);
  const info = errorInfo(app);
  return new ConnectError(bounded(app.message), CODE_BY_STATUS[app.status] ?? Code.Unknown, undefined, [
    { desc: ErrorInfoSchema, value: info },
  ]);
}

/** Client side: rebuilds the AppError a service raised, or maps a transport failure. */
export function fromConnectError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const ce = ConnectError.from(err);
  const [info] = ce.findDetails(ErrorInfoSchema);
  if (info) return appErrorOf(info);
  if (UNAVAILABLE_CODES.has(ce.code) || isCutStream(ce)) return serviceUnavailable();
  const [status, code] = STATUS_BY_CODE[ce.code] ?? [500, 'INTERNAL_SERVER_ERROR'];
  return new AppError({ code, status, message: status === 500 ? 'Internal server error' : ce.rawMessage });
}

/** The AppError an ErrorInfo describes (an RPC's failure or a batch item's). */
export function appErrorOf(info: ErrorInfo): AppError {
  return new AppError({
    code: info.code,
    status: info.httpStatus,
    message: info.message,
    errors: info.errors.length
      ? info.errors.map((e: FieldViolation) => ({
          field: e.field,
          message: e.message,
          code: e.code,
          ...(e.receivedJson ? { received: JSON.parse(e.receivedJson) } : {}),
        }))
      : undefined,
    details: info.detailsJson ? JSON.parse(info.detailsJson) : undefined,
    suggestion: info.suggestion || undefined,
    flat: info.flat,
  });
}
