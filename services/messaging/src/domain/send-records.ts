import { idempotencyKeyReused } from '@svc/lib/idempotency-store';
import type { Queryable } from '@svc/lib/db';
import type { SendRecordsStore } from '../store/send-records-store.js';
import type { SendResult } from './sending.js';

/** The gateway's Idempotency-Key of a /v1/send and the hash of its request (method, path, body). */
export interface SendIdempotency {
  key: string;
  fingerprint: string;
}

export type RecordedSend = SendResult & { replayed?: boolean };

/** Thrown inside the queueing transaction when another send committed the same key first. */
export class KeyAlreadyRecorded extends Error {
  constructor() {
    super('Idempotency-Key already recorded');
  }
}

interface StoredAnswer {
  emails: SendResult['emails'];
  timestamp: string;
}

/**
 * DESIGN.md decision 4: the record of a committed send lives with its emails, in this
 * service's database, so a retry never queues the mail twice, whatever the gateway's Redis
 * lost. The same key with the same request replays the first answer; with another
 * request it is 409 IDEMPOTENCY_KEY_REUSED.
 */
export class SendRecords {
  constructor(private readonly store: SendRecordsStore) {}

  /** The answer recorded for this key (marked replayed), or undefined when the key is free. */
  async replay(projectId: string, idem: SendIdempotency): Promise<RecordedSend | undefined> {
    const row = await this.store.find(projectId, idem.key);
    if (!row) return undefined;
    if (row.fingerprint !== idem.fingerprint) {
      const startedAt = row.created_at.toISOString();
      throw idempotencyKeyReused(idem.key, { method: 'POST', path: '/v1/send', startedAt, status: 200 });
    }
    const answer = row.answer as StoredAnswer;
    return { emails: answer.emails, timestamp: new Date(answer.timestamp), replayed: true };
  }

  /** In the emails' transaction; throws KeyAlreadyRecorded (rolling the emails back) when the key is taken. */
  async record(tx: Queryable, projectId: string, idem: SendIdempotency, result: SendResult): Promise<void> {
    const answer: StoredAnswer = { emails: result.emails, timestamp: result.timestamp.toISOString() };
    if (!(await this.store.insert(tx, projectId, idem.key, idem.fingerprint, answer))) throw new KeyAlreadyRecorded();
  }

  async deleteExpired(): Promise<number> {
    return this.store.deleteExpired();
  }
}
