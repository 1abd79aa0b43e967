import { KeyCache } from './key-cache.js';

const entry = { projectId: 'p1', kind: 'secret' as const, disabled: false };

describe('key cache', () => {
  test('a key is cached for the TTL and forgotten with its project', async () => {
    const cache = new KeyCache(60);
    await cache.set('sk_a', entry);
    expect(await cache.get('sk_a')).toEqual(entry);
    await cache.forgetProject('p2');
    expect(await cache.get('sk_a')).toEqual(entry);
    await cache.forgetProject('p1');
    expect(await cache.get('sk_a')).toBeNull();
  });

  test('an answer looked up before a rotation is not cached after it', async () => {
    const cache = new KeyCache(60);
    const mark = cache.mark();
    // Identity answered for the old key; the rotation is heard before that answer is cached.
    await cache.forgetProject('p1');
    await cache.set('sk_old', entry, mark);
    expect(await cache.get('sk_old')).toBeNull();
    // A lookup started after it is cached as usual.
    await cache.set('sk_new', entry, cache.mark());
    expect(await cache.get('sk_new')).toEqual(entry);
  });
});
