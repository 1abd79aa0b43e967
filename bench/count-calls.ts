/**
 * BENCH_COUNT=1 loads this into each service process (bench/support.ts): it counts the SQL
 * statements the process sends (by their first words), the RPCs it serves, the bus messages it
 * acknowledges and the JetStream messages it publishes (by subject), in embedded mode the in-process bus's
 * messages published (by subject) and handled (by durable), and writes the totals to
 * LOG_DIR/counts/<pid>.json on SIGUSR2, so a benchmark can print them per unit of work.
 */
import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { createRequire } from 'node:module';
import path from 'node:path';
import { MemoryBus } from '../lib/src/bus-memory.js';
import { JetStreamPublisher } from '../lib/src/jetstream-publish.js';

const counts: Record<string, number> = {};
const bump = (k: string) => {
  counts[k] = (counts[k] ?? 0) + 1;
};
const require = createRequire(import.meta.url);

const createServer = http2.createServer;
(http2 as { createServer: typeof createServer }).createServer = ((...args: Parameters<typeof createServer>) => {
  const server = createServer(...args);
  server.on('stream', (_stream, headers) => bump(`rpc ${headers[':path']}`));
  return server;
}) as typeof createServer;

const pg = require('pg');
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (q: string | { text?: string }, ...rest: unknown[]) {
  const text = typeof q === 'string' ? q : q?.text;
  // Digits as N: the outbox relay writes its ids into the text of its mark.
  if (text) bump(`sql ${text.replace(/\s+/g, ' ').trim().slice(0, 60).replace(/\d+/g, 'N')}`);
  return query.call(this, q, ...rest);
};

const { JsMsgImpl } = require('nats/lib/jetstream/jsmsg.js');
const ack = JsMsgImpl.prototype.ack;
JsMsgImpl.prototype.ack = function (this: { subject: string }) {
  bump(`msg ${this.subject.split('.').slice(1, 3).join('.')}`);
  return ack.call(this);
};

// Messages published (the outbox relay's, through NatsBus's JetStreamPublisher), by subject as `pub <a>.<b>`.
const publish = JetStreamPublisher.prototype.publish;
JetStreamPublisher.prototype.publish = function (this: JetStreamPublisher, subject, ...rest) {
  bump(`pub ${subject.split('.').slice(1, 3).join('.')}`);
  return publish.call(this, subject, ...rest);
};

// Embedded mode's in-process bus: messages published by subject (`pub <a>.<b>`), deliveries by durable (`handle <d>`).
const memoryPublish = MemoryBus.prototype.publish;
MemoryBus.prototype.publish = function (this: MemoryBus, subject, ...rest) {
  bump(`pub ${subject.split('.').slice(0, 2).join('.')}`);
  return memoryPublish.call(this, subject, ...rest);
};
const memorySubscribe = MemoryBus.prototype.subscribe;
MemoryBus.prototype.subscribe = function (this: MemoryBus, durable, subjects, handler, ...rest) {
  const counted: typeof handler = (message) => {
    bump(`handle ${durable}`);
    return handler(message);
  };
  return memorySubscribe.call(this, durable, subjects, counted, ...rest);
};

process.on('SIGUSR2', () => {
  writeFileSync(path.join(process.env.BENCH_COUNT_DIR ?? '.', `${process.pid}.json`), JSON.stringify(counts));
});
