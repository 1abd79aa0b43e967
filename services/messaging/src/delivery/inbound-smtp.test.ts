import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '@svc/lib/logger';
import type { InboundMail } from '../domain/inbound-mail.js';
import { startInboundSmtp } from './inbound-smtp.js';

// The inbound listener's own limits, over a real socket: the message size and the recipients of one message.
// The domain side is a stand-in that accepts every recipient and counts what it receives.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const logger = { info() {}, warn() {} } as unknown as Logger;

/** A line-reading SMTP client: each command's reply (multi-line replies end at `NNN `). */
function client(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  let buffer = '';
  const waiting: ((line: string) => void)[] = [];
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    buffer += d;
    for (let nl = buffer.indexOf('\r\n'); nl !== -1; nl = buffer.indexOf('\r\n')) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 2);
      if (/^\d{3} /.test(line)) waiting.shift()?.(line);
    }
  });
  const reply = () => new Promise<string>((resolve) => waiting.push(resolve));
  const write = (data: string | Buffer) => new Promise<void>((resolve) => socket.write(data, () => resolve()));
  return {
    reply,
    write,
    async command(line: string): Promise<string> {
      const answer = reply();
      await write(`${line}\r\n`);
      return answer;
    },
    close: () => socket.destroy(),
  };
}

describe('inbound SMTP listener', () => {
  const received: Buffer[] = [];
  const inbound = {
    recipientProjects: async () => ['project'],
    receive: async (m: { raw: Buffer }) => {
      received.push(m.raw);
      return { unsubscribed: 0, recorded: 1 };
    },
  } as unknown as InboundMail;
  let server: Awaited<ReturnType<typeof startInboundSmtp>>;

  beforeAll(async () => {
    server = await startInboundSmtp(inbound, { host: '127.0.0.1', port: 0, logger, maxBytes: 1024 * 1024 });
  });
  afterAll(() => server.close());

  test('a message over the size limit is a 552 and its bytes are not kept while it streams', async () => {
    const c = client(server.port);
    expect(await c.reply()).toMatch(/^220 /);
    expect(await c.command('EHLO sender.example')).toMatch(/^250 /);
    expect(await c.command('MAIL FROM:<a@sender.example>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<b@mail.example>')).toMatch(/^250 /);
    expect(await c.command('DATA')).toMatch(/^354 /);
    gc();
    const before = process.memoryUsage().arrayBuffers;
    // 96 MB in fresh 1 MB chunks: kept, they would still be reachable when the last one is written.
    const line = `${'x'.repeat(1022)}\r\n`;
    for (let i = 0; i < 96; i++) await c.write(Buffer.from(line.repeat(1024)));
    gc();
    const held = process.memoryUsage().arrayBuffers - before;
    const answer = c.reply();
    await c.write('.\r\n');
    expect(await answer).toMatch(/^552 /);
    c.close();
    expect(received).toHaveLength(0);
    // Kept, the 96 MB would all be held; the sockets' own buffers and what the last gc left came to 34 MB once in CI.
    expect(held).toBeLessThan(48 * 1024 * 1024);
  });

  test('at most 100 recipients per message (452 after), and a message within the limits is received', async () => {
    const c = client(server.port);
    await c.reply();
    await c.command('EHLO sender.example');
    await c.command('MAIL FROM:<a@sender.example>');
    for (let i = 0; i < 100; i++) expect(await c.command(`RCPT TO:<r${i}@mail.example>`)).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<r100@mail.example>')).toMatch(/^452 /);
    expect(await c.command('DATA')).toMatch(/^354 /);
    expect(await c.command('Subject: hi\r\n\r\nhello\r\n.')).toMatch(/^250 /);
    c.close();
    expect(received).toHaveLength(1);
    expect(received[0].toString()).toContain('hello');
  });
});
