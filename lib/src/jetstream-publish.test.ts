import { headers, type NatsError } from 'nats';
import { BusClosed } from './bus.js';
import { NatsBus } from './bus-nats.js';
import { JetStreamPublisher } from './jetstream-publish.js';
import { natsBusFixture, until } from './test-nats-bus.js';

// JetStream publishes acknowledged on our own inbox (the local NATS): what nats.js's `js.publish` gave the bus,
// the dedupe id, the request headers, and the errors the bus and the outbox relay act on.

const nats = natsBusFixture('pubtest', 'publish-test');
const { prefix, logger } = nats;

test('a message published twice with one id is stored once, with its request id and traceparent', async () => {
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const context = { requestId: 'req-pub-1', traceparent };
  await Promise.all([
    nats.bus.publish('contacts.deleted', { contactId: 'c1' }, 'pub-dup-1', context),
    nats.bus.publish('contacts.deleted', { contactId: 'c1' }, 'pub-dup-1', context),
  ]);
  await nats.bus.publish('contacts.deleted', { contactId: 'c2' }, 'pub-dup-2');
  const jsm = await nats.raw.jetstreamManager();
  const info = await jsm.streams.info(nats.bus.streamName('CONTACTS'));
  expect(info.state.messages).toBe(2);
  const first = await jsm.streams.getMessage(nats.bus.streamName('CONTACTS'), { seq: info.state.first_seq });
  expect(first.header.get('Nats-Msg-Id')).toBe('pub-dup-1');
  expect(first.header.get('X-Request-Id')).toBe('req-pub-1');
  expect(first.header.get('traceparent')).toBe(traceparent);
  expect(first.json()).toEqual({ contactId: 'c1' });
});

test('a subject no stream takes fails with no responders (503), after one repair pass', async () => {
  const err = (await nats.bus.publish('nowhere.at.all', {}, 'pub-nowhere').catch((e) => e)) as NatsError;
  expect(err.code).toBe('503');
  expect(nats.bus.connected()).toBe(true);
});

test('a stream that refuses the message fails the publish with its error', async () => {
  const publisher = new JetStreamPublisher(nats.raw);
  const h = headers();
  h.set('Nats-Expected-Stream', 'not-this-stream');
  const err = (await publisher
    .publish(`${prefix}.contacts.deleted`, Buffer.from('{}'), 'pub-refused', h)
    .catch((e) => e)) as NatsError;
  expect(err.code).toBe('400');
  expect(err.api_error?.err_code).toBe(10060);
});

test('a publish nobody acknowledges fails with a timeout; close() fails the ones still waiting', async () => {
  const subject = `${prefix}.silent`;
  const silent = nats.raw.subscribe(subject); // a responder that never answers: no 503, no ack
  const publisher = new JetStreamPublisher(nats.raw, 200);
  const timedOut = (await publisher.publish(subject, Buffer.from('{}'), 'pub-silent-1').catch((e) => e)) as NatsError;
  expect(timedOut.code).toBe('TIMEOUT');
  const other = new JetStreamPublisher(nats.raw, 60_000);
  const waiting = other.publish(subject, Buffer.from('{}'), 'pub-silent-2').catch((e) => e);
  other.close();
  expect(((await waiting) as NatsError).code).toBe('CONNECTION_CLOSED');
  silent.unsubscribe();
});

test('a publish still waiting for its acknowledgement when the bus closes fails with BusClosed', async () => {
  const subject = 'silent.closing';
  const silent = nats.raw.subscribe(`${prefix}.${subject}`); // answers nothing: the publish waits
  await nats.raw.flush();
  const closing = NatsBus.start(nats.url, prefix, 'publish-test-closing', logger);
  expect(await until(() => closing.connected())).toBe(true);
  const waiting = closing.publish(subject, {}, 'pub-closing').catch((e) => e);
  await closing.close();
  expect(await waiting).toBeInstanceOf(BusClosed);
  silent.unsubscribe();
});
