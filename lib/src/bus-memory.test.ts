import { JsonText } from './bus.js';
import { MemoryBus } from './bus-memory.js';
import { capturingLogger } from './test-logger.js';

describe('MemoryBus', () => {
  test('a subscriber or watcher added after a subject was published takes its later messages', async () => {
    const bus = new MemoryBus(capturingLogger().logger);
    const seen: string[] = [];
    await bus.subscribe('first', ['emails.>'], async (m) => {
      seen.push(`first ${m.subject} ${m.id}`);
    });
    await bus.publish('emails.sent', { n: 1 }, 'a');
    await bus.subscribe('second', ['emails.sent', 'contacts.*'], async (m) => {
      seen.push(`second ${m.subject} ${m.id}`);
    });
    bus.watch(['emails.*'], (m) => seen.push(`watch ${m.subject}`));
    await bus.publish('emails.sent', { n: 2 }, 'b');
    await bus.publish('emails.open', { n: 3 }, 'c');
    await bus.publish('contacts.created', { n: 4 }, 'd');
    expect(seen).toEqual([
      'first emails.sent a',
      'watch emails.sent',
      'first emails.sent b',
      'second emails.sent b',
      'watch emails.open',
      'first emails.open c',
      'second contacts.created d',
    ]);
    await bus.close();
  });

  test('every subscriber, watcher and retry gets its own copy of the payload (text or value)', async () => {
    const bus = new MemoryBus(capturingLogger().logger);
    const seen: unknown[] = [];
    let failed = false;
    const take = async (m: { data: unknown }) => {
      seen.push(structuredClone(m.data));
      (m.data as { list: number[] }).list.push(9);
    };
    await bus.subscribe('a', ['x.*'], take);
    await bus.subscribe('b', ['x.*'], async (m) => {
      await take(m);
      if (!failed) {
        failed = true;
        throw new Error('once');
      }
    });
    bus.watch(['x.*'], (m) => void take(m));
    const original = { list: [1] };
    await bus.publish('x.value', original, 'v');
    expect(original).toEqual({ list: [1] });
    await bus.publish('x.text', new JsonText('{"list":[2]}'), 't');
    // Each saw the payload as published, the retry of b too (after its failed attempt changed its copy).
    expect(seen).toEqual([
      { list: [1] },
      { list: [1] },
      { list: [1] },
      { list: [1] },
      { list: [2] },
      { list: [2] },
      { list: [2] },
    ]);
    await bus.close();
  });

  test('a message a subscriber skips never reaches its handler; a throwing skip skips nothing', async () => {
    const bus = new MemoryBus(capturingLogger().logger);
    const seen: string[] = [];
    const skipped: unknown[] = [];
    await bus.subscribe('picky', ['x.*'], async (m) => void seen.push(`picky ${m.id}`), {
      skip: (subject, data) => {
        skipped.push([subject, structuredClone(data)]);
        if ((data as { boom?: boolean }).boom) throw new Error('boom');
        return (data as { keep?: boolean }).keep !== true;
      },
    });
    await bus.subscribe('all', ['x.*'], async (m) => void seen.push(`all ${m.id}`));
    await bus.publish('x.a', new JsonText('{"keep":false}'), '1');
    await bus.publish('x.a', { keep: true }, '2');
    await bus.publish('x.b', new JsonText('{"boom":true}'), '3');
    expect(seen).toEqual(['all 1', 'picky 2', 'all 2', 'picky 3', 'all 3']);
    expect(skipped).toEqual([
      ['x.a', { keep: false }],
      ['x.a', { keep: true }],
      ['x.b', { boom: true }],
    ]);
    await bus.close();
  });
});
