// One error type crosses every layer; only the gateway turns it into the HTTP envelope.

export interface FieldError {
  field: string;
  message: string;
  code: string;
  received?: unknown;
}

export interface AppErrorInit {
  code: string;
  status: number;
  message: string;
  errors?: FieldError[];
  details?: Record<string, unknown>;
  suggestion?: string;
  /** Dashboard endpoints that SPEC.md shows answering `{error: message}` instead of the envelope. */
  flat?: boolean;
}

export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly errors?: FieldError[];
  readonly details?: Record<string, unknown>;
  readonly suggestion?: string;
  readonly flat: boolean;

  constructor(init: AppErrorInit) {
    super(init.message);
    this.name = 'AppError';
    this.code = init.code;
    this.status = init.status;
    this.errors = init.errors;
    this.details = init.details;
    this.suggestion = init.suggestion;
    this.flat = init.flat ?? false;
  }

  toJSON(): AppErrorInit {
    return {
      code: this.code,
      status: this.status,
      message: this.message,
      errors: this.errors,
      details: this.details,
      suggestion: this.suggestion,
      flat: this.flat || undefined,
    };
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new AppError({ code: 'BAD_REQUEST', status: 400, message, details });

/** 400 with SPEC.md's flat `{error}` body, seen on POST /contacts, /templates, /segments. */
export const flatBadRequest = (message: string) =>
  new AppError({ code: 'BAD_REQUEST', status: 400, message, flat: true });

export const validationError = (errors: FieldError[], message = 'Validation failed') =>
  new AppError({ code: 'VALIDATION_ERROR', status: 422, message, errors });

export const notFound = (resource: string, id: string, code = 'RESOURCE_NOT_FOUND') =>
  new AppError({ code, status: 404, message: `${resource} not found`, details: { resource, id } });

export const conflict = (message: string, details?: Record<string, unknown>) =>
  new AppError({ code: 'CONFLICT', status: 409, message, details });

export const unauthorized = (code: string, message: string) => new AppError({ code, status: 401, message });

export const forbidden = (message: string, code = 'FORBIDDEN') => new AppError({ code, status: 403, message });

export const internal = (message = 'Internal server error') =>
  new AppError({ code: 'INTERNAL_SERVER_ERROR', status: 500, message });

/** Seconds a client is told to wait (`Retry-After`) before retrying a 503. */
/**
 * SPEC.md's answer to sending from a domain the project has not verified: 403 with code INTERNAL_SERVER_ERROR.
 * `sender` is the domain or the whole address; `more` ends the suggestion (messaging's sandbox hint).
 */
export function unverifiedDomain(sender: string, more = ''): AppError {
  const domain = sender.slice(sender.lastIndexOf('@') + 1).toLowerCase();
  return new AppError({
    code: 'INTERNAL_SERVER_ERROR',
    status: 403,
    message:
      `The domain ${domain} is not verified. ` +
      'Add it under domains and publish its DNS records before sending from it.',
    details: { reason: 'domain_not_verified', domain },
    suggestion:
      `Add ${domain} with POST /domains, publish the DNS records it answers, then check them with ` +
      `GET /domains/{id}/verify (a background check also runs every 5 minutes).${more}`,
  });
}

export const RETRY_AFTER_SECONDS = 2;

/** A dependency (database, another service) is down or too slow: the client should retry later. */
export const serviceUnavailable = (message = 'Service temporarily unavailable; retry shortly') =>
  new AppError({ code: 'SERVICE_UNAVAILABLE', status: 503, message, details: { retryAfter: RETRY_AFTER_SECONDS } });

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
