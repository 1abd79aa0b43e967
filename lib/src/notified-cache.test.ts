import { createPool } from './db.js';
import { NotifiedCache } from './notified-cache.js';
import { capturingLogger } from './test-logger.js';

const DATABASE = 'postgres://postgres@127.0.0.1:5432/postgres';

describe('NotifiedCache', () => {
  const pool = createPool(DATABASE, 3);
  const channel = `notified_cache_test_${process.pid}`;
  afterAll(() => pool.end());

  it('keeps an answer until a NOTIFY on its channel, and keeps nothing before it listens', async () => {
    const cache = new NotifiedCache(pool, channel, capturingLogger().logger);
    let reads = 0;
    const load = async () => ++reads;
    expect(await cache.get('k', load)).toBe(1);
    expect(await cache.get('k', load)).toBe(2); // not listening yet: nothing kept
    await cache.start();
    try {
      expect(await cache.get('k', load)).toBe(3);
      expect(await cache.get('k', load)).toBe(3);
      await pool.query(`SELECT pg_notify('${channel}', '')`);
      let seen = 3;
      for (let i = 0; i < 100 && seen === 3; i++) {
        await new Promise((r) => setTimeout(r, 20));
        seen = await cache.get('k', load);
      }
      expect(seen).toBe(4);
    } finally {
      await cache.stop();
    }
  });

  it('does not keep an answer read while a notification arrived', async () => {
    const cache = new NotifiedCache(pool, `${channel}_2`, capturingLogger().logger);
    await cache.start();
    try {
      let reads = 0;
      expect(
        await cache.get('k', async () => {
          cache.clear(); // as a notification arriving mid-read does
          return ++reads;
        }),
      ).toBe(1);
      expect(await cache.get('k', async () => ++reads)).toBe(2);
      expect(await cache.get('k', async () => ++reads)).toBe(2);
    } finally {
      await cache.stop();
    }
  });
});
