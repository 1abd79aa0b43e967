import type { RequestHandler, Response } from 'express';
import { AppError } from '@svc/lib/errors';
import type { IdempotencyRecord, IdempotencyStore } from '@svc/lib/idempotency-store';
import { RedisUnavailableError } from '@svc/lib/redis';
import { checkIdempotencyKey, decide, fingerprint, stillInProgress } from './idempotency-rules.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set on a POST with an Idempotency-Key: routes whose service records the effect itself pass it on. */
    idempotency?: { key: string; fingerprint: string };
  }
}

const WAIT_STEP_MS = 50;
const WAIT_MAX_MS = 10_000;
/**
 * How long a claim without an answer holds the key: longer than a request can run (RPC
 * deadline 30 s), short enough that a crash or a lost `complete` frees the key within a
 * minute instead of answering 409 "in progress" for the whole TTL.
 */
export const CLAIM_TTL_SECONDS = 60;

function replay(res: Response, record: IdempotencyRecord): void {
  const r = record.response!;
  res.setHeader('Idempotent-Replayed', 'true');
  res
    .status(r.status)
    .type(r.contentType ?? 'application/json')
    .send(r.body);
}

/**
 * `Idempotency-Key`, scoped to the project: the first request runs and its answer is kept
 * for the TTL; the same request again gets that answer; a different request with the key
 * gets 409; a request arriving while the first still runs waits for its answer (then replays it or, when it is
 * a different request, gets the 409 with the first one's status code).
 * Answers of 5xx are not kept, so the client can retry. When the store (Redis) fails, the
 * request runs without the shared claim rather than failing: /v1/send is still deduplicated
 * by the messaging service, which records the key with the queued emails.
 */
export function idempotency(store: IdempotencyStore, ttlSeconds: number): RequestHandler {
  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    // Only JSON POSTs: GET, PATCH and DELETE are idempotent already, and a multipart body is
    // not read yet here, so it could not be told apart from another upload.
    if (key === undefined || req.method !== 'POST' || req.is('multipart/form-data')) return next();
    checkIdempotencyKey(key);
    const storeKey = `${req.projectId}:${key}`;
    const record: IdempotencyRecord = {
      fingerprint: fingerprint(req.method, req.path, req.body),
      method: req.method,
      path: req.originalUrl.split('?')[0],
      startedAt: new Date().toISOString(),
    };
    req.idempotency = { key, fingerprint: record.fingerprint };

    try {
      for (let waited = 0; ; waited += WAIT_STEP_MS) {
        const existing = await store.claim(storeKey, record, CLAIM_TTL_SECONDS);
        if (!existing) break;
        const decision = decide(key, existing, record.fingerprint);
        if (decision.action === 'replay') return replay(res, decision.record);
        if (waited >= WAIT_MAX_MS) throw stillInProgress(key, existing, record.fingerprint);
        await new Promise((r) => setTimeout(r, WAIT_STEP_MS));
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      // While Redis is known to be down its "redis down" line has said so; one per request is noise.
      const level = err instanceof RedisUnavailableError ? 'debug' : 'warn';
      req.log[level]({ err }, 'Idempotency-Key not claimed (store failed): running without the shared claim');
      return next();
    }

    const send = res.send.bind(res);
    res.send = (body?: unknown) => {
      const status = res.statusCode;
      const text =
        typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('utf8') : JSON.stringify(body ?? '');
      const contentType = String(res.get('content-type') ?? '') || undefined;
      const done =
        status >= 500
          ? store.release(storeKey)
          : store.complete(storeKey, { ...record, response: { status, body: text, contentType } }, ttlSeconds);
      // The claim then expires by itself within CLAIM_TTL_SECONDS.
      done.catch((err) => req.log.warn({ err }, 'idempotency record not saved'));
      return send(body);
    };
    next();
  };
}
