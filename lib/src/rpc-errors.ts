import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema, type FieldViolation } from '@svc/proto/svc/common/v1/error_pb';
import { AppError, internal } from './errors.js';

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
  [Code.Unavailable]: [503, 'SERVICE_UNAVAILABLE'],
  [Code.DeadlineExceeded]: [504, 'GATEWAY_TIMEOUT'],
};

/** Server side: an AppError keeps every field through the wire as an ErrorInfo detail. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const app = err instanceof AppError ? err : internal();
  const info = create(ErrorInfoSchema, {
    code: app.code,
    httpStatus: app.status,
    message: app.message,
    errors: (app.errors ?? []).map((e) => ({
      field: e.field,
      message: e.message,
      code: e.code,
      receivedJson: e.received === undefined ? '' : JSON.stringify(e.received),
    })),
    detailsJson: app.details ? JSON.stringify(app.details) : '',
    suggestion: app.suggestion ?? '',
    flat: app.flat,
  });
  return new ConnectError(app.message, CODE_BY_STATUS[app.status] ?? Code.Unknown, undefined, [
    { desc: ErrorInfoSchema, value: info },
  ]);
}

/** Client side: rebuilds the AppError a service raised, or maps a transport failure. */
export function fromConnectError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const ce = ConnectError.from(err);
  const [info] = ce.findDetails(ErrorInfoSchema);
  if (info) {
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
  const [status, code] = STATUS_BY_CODE[ce.code] ?? [500, 'INTERNAL_SERVER_ERROR'];
  return new AppError({ code, status, message: status === 500 ? 'Internal server error' : ce.rawMessage });
}
