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
});
