import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { dataBytes, dataReady } from './smtp-session.js';
import { createSmtpTransport } from './smtp-transport.js';

/** The bytes nodemailer's DataStream puts on the wire for `raw` (dot-stuffed, terminated). */
async function viaDataStream(raw: Buffer): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(
    Readable.from([raw]),
    new DataStream(),
    new Writable({
      write(chunk: Buffer, _enc, done) {
        out.push(chunk);
        done();
      },
    }),
  );
  return Buffer.concat(out);
}

describe('dataBytes', () => {
  test.each([
    ['CRLF lines', 'a: b\r\n\r\nhello\r\n'],
    ['no final line end', 'a: b\r\n\r\nhello'],
    ['a leading dot', '.a\r\n\r\nx'],
    ['dots at line starts', 'a: b\r\n\r\n.\r\n..x\r\n.y\r\nz.\r\n'],
    ['bare LF and CR', 'a: b\n\nx\ry\r.z\n.w\r\n'],
    ['ends in CR', 'a\r\nb\r'],
    ['empty', ''],
    ['a wrapped link', 'a: b\r\n\r\nhttps://x.test/t/abc=\r\n.def\r\n.\r\n'],
  ])('%s: the same bytes as nodemailer DataStream', async (_name, text) => {
    const raw = Buffer.from(text, 'latin1');
    const wire = (await viaDataStream(raw)).toString('latin1');
    expect(dataBytes(raw).toString('latin1')).toBe(wire);
    // Ready: the message goes as it is, followed by `.` CRLF.
    expect(dataReady(raw)).toBe(wire === `${text}.\r\n`);
  });
});

interface Received {
  from: string;
  to: string[];
  raw: string;
  user?: string;
}

async function server(options: Partial<SMTPServerOptions>) {
  const received: Received[] = [];
  const srv = new SMTPServer({
    logger: false,
    authOptional: true,
    onRcptTo(address, _session, cb) {
      if (address.address.startsWith('bounce'))
        return cb(Object.assign(new Error('no such user'), { responseCode: 550 }));
      if (address.address.startsWith('defer')) return cb(Object.assign(new Error('later'), { responseCode: 451 }));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('latin1');
        if (raw.includes('REFUSE-ME')) return cb(Object.assign(new Error('content refused'), { responseCode: 554 }));
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          user: session.user as string | undefined,
        });
        cb(null, 'queued as X');
      });
    },
    ...options,
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', () => resolve()));
  const port = (srv.server.address() as AddressInfo).port;
  const closedListeners: (() => void)[] = [];
  srv.server.on('connection', (socket) => socket.on('close', () => closedListeners.forEach((f) => f())));
  const onClosed = (f: () => void) => closedListeners.push(f);
  const onConnection = (f: () => void) => srv.server.on('connection', f);
  const close = () => new Promise<void>((resolve) => srv.close(() => resolve()));
  return { port, received, onClosed, onConnection, close };
}

const message = (to: string[], body = 'hello\r\n.dot line\r\n') => ({
  raw: Buffer.from(`From: a@x.test\r\nTo: ${to.join(', ')}\r\nSubject: s\r\n\r\n${body}`),
  envelope: { from: 'a@x.test', to },
});

describe.each([
  ['pipelined', {}],
  ['one command at a time', { hidePIPELINING: true }],
])('SMTP transport (%s)', (_name, extra) => {
  test('delivers, refuses (5xx, 4xx, content), then delivers again on the same session', async () => {
    const srv = await server({ disabledCommands: ['STARTTLS', 'AUTH'], ...extra });
    const t = createSmtpTransport(`smtp://127.0.0.1:${srv.port}?tls=off`, 1);
    try {
      expect(await t.sendRaw(message(['ok1@y.test']))).toMatch(/^250 /);
      await expect(t.sendRaw(message(['bounce@y.test']))).rejects.toMatchObject({
        code: 'EENVELOPE',
        responseCode: 550,
        command: 'RCPT TO',
        response: expect.stringMatching(/^550 /),
      });
      // Some refused for good, one deferred: the deferral is reported (the message is retried).
      await expect(t.sendRaw(message(['bounce@y.test', 'defer@y.test']))).rejects.toMatchObject({
        code: 'EENVELOPE',
        responseCode: 451,
      });
      await expect(t.sendRaw(message(['ok2@y.test'], 'REFUSE-ME\r\n'))).rejects.toMatchObject({
        code: 'EMESSAGE',
        responseCode: 554,
        command: 'DATA',
      });
      // One of two recipients refused: sent to the other.
      expect(await t.sendRaw(message(['ok3@y.test', 'bounce@y.test']))).toMatch(/^250 /);
      expect(await t.sendRaw(message(['ok4@y.test']))).toMatch(/^250 /);
      const plain = message(['ok5@y.test'], 'plain\r\nlines\r\n');
      expect(await t.sendRaw({ ...plain, ready: dataReady(plain.raw) })).toMatch(/^250 /);
      expect(srv.received.map((r) => r.to)).toEqual([['ok1@y.test'], ['ok3@y.test'], ['ok4@y.test'], ['ok5@y.test']]);
      expect(srv.received[0].raw).toContain('\r\n.dot line\r\n');
      expect(srv.received[3].raw).toBe(plain.raw.toString('latin1'));
    } finally {
      t.close();
      await srv.close();
    }
  });

  test('messages sent at once over one connection queue behind each other; refusals stay their own', async () => {
    const srv = await server({ disabledCommands: ['STARTTLS', 'AUTH'], ...extra });
    const t = createSmtpTransport(`smtp://127.0.0.1:${srv.port}?tls=off`, 1);
    let connections = 0;
    srv.onConnection(() => connections++);
    try {
      const sends = [
        message(['ok1@y.test']),
        message(['bounce@y.test']),
        message(['ok2@y.test'], 'REFUSE-ME\r\n'),
        message(['ok3@y.test']),
        message(['defer@y.test']),
        message(['ok4@y.test'], 'plain\r\n'),
        message(['ok5@y.test', 'bounce@y.test']),
      ].map((m) => t.sendRaw({ ...m, ready: dataReady(m.raw) }).then(String, (err) => err));
      const results = await Promise.all(sends);
      expect(results.map((r) => (typeof r === 'string' ? r.slice(0, 3) : `${r.code} ${r.responseCode}`))).toEqual([
        '250',
        'EENVELOPE 550',
        'EMESSAGE 554',
        '250',
        'EENVELOPE 451',
        '250',
        '250',
      ]);
      expect(srv.received.map((r) => r.to)).toEqual([['ok1@y.test'], ['ok3@y.test'], ['ok4@y.test'], ['ok5@y.test']]);
      expect(srv.received[2].raw).toBe('From: a@x.test\r\nTo: ok4@y.test\r\nSubject: s\r\n\r\nplain\r\n');
      expect(connections).toBe(1);
    } finally {
      t.close();
      await srv.close();
    }
  });
});

test('STARTTLS (self-signed, tls=insecure) and AUTH PLAIN / LOGIN', async () => {
  for (const methods of [['PLAIN', 'LOGIN'], ['LOGIN']]) {
    const srv = await server({
      authMethods: methods,
      authOptional: false,
      onAuth(auth, _session, cb) {
        if (auth.username === 'u s' && auth.password === 'p:w')
          return cb(null, { user: `${auth.method}:${auth.username}` });
        cb(new Error('bad login'));
      },
    });
    const good = createSmtpTransport(`smtp://u%20s:p%3Aw@127.0.0.1:${srv.port}?tls=insecure`, 2);
    const bad = createSmtpTransport(`smtp://u%20s:nope@127.0.0.1:${srv.port}?tls=insecure`, 1);
    const untrusted = createSmtpTransport(`smtp://u%20s:p%3Aw@127.0.0.1:${srv.port}`, 1);
    try {
      await Promise.all([good.sendRaw(message(['a@y.test'])), good.sendRaw(message(['b@y.test']))]);
      expect(srv.received.map((r) => r.user)).toEqual([`${methods[0]}:u s`, `${methods[0]}:u s`]);
      await expect(bad.sendRaw(message(['c@y.test']))).rejects.toMatchObject({ code: 'EAUTH', responseCode: 535 });
      // The sink's certificate is self-signed: without tls=insecure the upgrade fails.
      await expect(untrusted.sendRaw(message(['d@y.test']))).rejects.toMatchObject({ code: 'ETLS' });
    } finally {
      for (const t of [good, bad, untrusted]) t.close();
      await srv.close();
    }
  }
});

test('a server that closes an idle session: the next message goes over a new one', async () => {
  const srv = await server({ disabledCommands: ['STARTTLS', 'AUTH'], socketTimeout: 200 });
  let closed = 0;
  const t = createSmtpTransport(`smtp://127.0.0.1:${srv.port}?tls=off`, 1);
  try {
    expect(await t.sendRaw(message(['one@y.test']))).toMatch(/^250 /);
    srv.onClosed(() => closed++);
    // smtp-server answers 421 and closes the session after 200 ms without a command.
    for (let i = 0; i < 100 && !closed; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(1);
    expect(await t.sendRaw(message(['two@y.test']))).toMatch(/^250 /);
    expect(srv.received.map((r) => r.to[0])).toEqual(['one@y.test', 'two@y.test']);
  } finally {
    t.close();
    await srv.close();
  }
});
