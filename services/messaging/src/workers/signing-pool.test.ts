import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { capturingLogger } from '@svc/lib/test-logger';
import type { MailMessage } from '../delivery/smtp-transport.js';
import { testDkimKey } from '../delivery/test-dkim-key.js';
import { inlineBuilder, SigningPool } from './signing-pool.js';

const domain = 'signer.test';
const selector = 'pool';
const { privateKey, verify } = testDkimKey(domain, selector);

const message = (subject: string, extra: Partial<MailMessage> = {}): MailMessage => ({
  messageId: `<${subject.replace(/\W/g, '')}.${Math.random().toString(36).slice(2)}@${domain}>`,
  from: { name: 'Sender', address: `news@${domain}` },
  to: { name: 'Reader', address: 'reader@example.org' },
  subject,
  html: `<p>Hello, ${subject}</p>`,
  text: `Hello, ${subject}`,
  dkim: { domainName: domain, keySelector: selector, privateKey },
  ...extra,
});

/** The nice value of each of this process's threads (Linux: field 19 of /proc/self/task/<tid>/stat). */
const threadNices = (): number[] =>
  readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });

const crashingThread = new URL('./test-threads/crashing-signer.ts', import.meta.url);
const brokenThread = new URL('./test-threads/broken-signer.ts', import.meta.url);

describe('SigningPool', () => {
  let pool: SigningPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  test('messages signed on the threads carry a DKIM signature that verifies, and the envelope', async () => {
    pool = new SigningPool({ size: 2, logger: capturingLogger().logger });
    const attachment = { filename: 'a.txt', content: Buffer.from('attached bytes'), contentType: 'text/plain' };
    const built = await Promise.all(
      Array.from({ length: 6 }, (_, i) => pool!.build(message(`number ${i}`, { attachments: [attachment] }))),
    );
    expect(pool.threads).toBe(2);
    for (const [i, b] of built.entries()) {
      expect(Buffer.isBuffer(b.raw)).toBe(true);
      expect(b.envelope).toEqual({ from: `news@${domain}`, to: ['reader@example.org'] });
      const raw = b.raw.toString('latin1');
      expect(raw).toContain(`Subject: number ${i}`);
      expect(raw).toContain(Buffer.from('attached bytes').toString('base64'));
      const [result] = await verify(b.raw);
      expect(result).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
    }
  });

  test('the same header fields, in the same order, as building on the main thread', async () => {
    pool = new SigningPool({ size: 1, logger: capturingLogger().logger });
    const m = message('same');
    const [threaded, inline] = await Promise.all([pool.build(m), inlineBuilder.build(m)]);
    const header = (raw: Buffer) => raw.toString('latin1').split('\r\n\r\n')[0];
    const names = (raw: Buffer) => header(raw).match(/^[A-Za-z-]+(?=:)/gm);
    expect(names(threaded.raw)).toEqual(names(inline.raw));
    expect((await verify(inline.raw))[0].status.result).toBe('pass');
  });

  test('a thread that exits is replaced: messages it held are signed by the next one, the culprit fails', async () => {
    const { logger, lines } = capturingLogger();
    pool = new SigningPool({ size: 1, logger, threadUrl: crashingThread });
    const before = await pool.build(message('before'));
    expect(before.raw.length).toBeGreaterThan(0);
    // One batch: the thread has built "first" but not yet answered it when "exit" kills it.
    const results = await Promise.allSettled([
      pool.build(message('first')),
      pool.build(message('exit')),
      pool.build(message('second')),
      pool.build(message('third')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/signing thread exited \(code 3\) 2 times/);
    expect(
      lines.filter((l) => l.msg === 'DKIM signing thread exited; starting another and handing its messages on'),
    ).toHaveLength(2);
    // The pool still works, on a fresh thread.
    const after = await pool.build(message('after'));
    expect((await verify(after.raw))[0].status.result).toBe('pass');
  });

  test('an uncaught exception in a thread does not reach the main thread', async () => {
    const { logger, lines } = capturingLogger();
    pool = new SigningPool({ size: 2, logger, threadUrl: crashingThread });
    const results = await Promise.allSettled([pool.build(message('throw')), pool.build(message('fine'))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
    expect(lines.some((l) => l.msg === 'DKIM signing thread failed')).toBe(true);
    await expect(pool.build(message('later'))).resolves.toHaveProperty('envelope');
  });

  test('threads that cannot start: after three tries the pool signs on the main thread', async () => {
    const { logger, lines } = capturingLogger();
    pool = new SigningPool({ size: 1, logger, threadUrl: brokenThread });
    const results = await Promise.allSettled([1, 2, 3, 4].map((i) => pool!.build(message(`m${i}`))));
    // The first message was on each of the first two threads that died; the rest are signed inline.
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(3);
    expect(lines.some((l) => l.msg === 'DKIM signing threads do not start; signing on the main thread instead')).toBe(
      true,
    );
    const built = await pool.build(message('inline now'));
    expect((await verify(built.raw))[0].status.result).toBe('pass');
    expect(pool.threads).toBe(0);
  });

  test('idle threads end and start again on the next message', async () => {
    pool = new SigningPool({ size: 2, logger: capturingLogger().logger, idleMs: 50 });
    await pool.build(message('one'));
    expect(pool.threads).toBe(2);
    const deadline = Date.now() + 5_000;
    while (pool.threads > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(pool.threads).toBe(0);
    await pool.build(message('two'));
    expect(pool.threads).toBe(2);
  });

  test('a trickle of mail is built on the calling thread; more in one second starts the threads', async () => {
    pool = new SigningPool({ size: 2, logger: capturingLogger().logger, inlineBelowPerSecond: 3 });
    // At most three builds fall in the current second, so the first ones are inline unless the second turns.
    const second = Math.floor(Date.now() / 1000);
    const [first] = await verify((await pool.build(message('one'))).raw);
    expect(first).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
    if (Math.floor(Date.now() / 1000) === second) expect(pool.threads).toBe(0);
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => pool!.build(message(`burst ${i}`))));
    for (const b of burst) expect((await verify(b.raw))[0]).toMatchObject({ status: { result: 'pass' } });
    expect(pool.threads).toBe(2);
  });

  (existsSync('/proc/self/task') ? test : test.skip)(
    'the threads run at the nice increment asked for; the calling thread keeps its priority',
    async () => {
      const base = getPriority();
      const niced = (nice: number) => threadNices().filter((n) => n === Math.min(19, base + nice)).length;
      expect(niced(7)).toBe(0);
      pool = new SigningPool({ size: 2, logger: capturingLogger().logger, nice: 7 });
      await Promise.all([pool.build(message('nice one')), pool.build(message('nice two'))]);
      expect(pool.threads).toBe(2);
      expect(niced(7)).toBe(2);
      expect(getPriority()).toBe(base);
      await pool.close();
      pool = new SigningPool({ size: 1, logger: capturingLogger().logger });
      await pool.build(message('not niced'));
      expect(niced(7)).toBe(0);
    },
  );

  test('a closed pool refuses new work', async () => {
    pool = new SigningPool({ size: 1, logger: capturingLogger().logger });
    await pool.close();
    await expect(pool.build(message('late'))).rejects.toThrow(/closed/);
  });
});
