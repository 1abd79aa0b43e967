/** A seeded PRNG (mulberry32) for generated test cases: the same cases on every run, numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fewer than `max` pieces drawn from `pieces` with `random` and joined: generated text for tests. */
export function randomText(random: () => number, pieces: readonly string[], max: number): string {
  let s = '';
  for (let n = Math.floor(random() * max); n > 0; n--) s += pieces[Math.floor(random() * pieces.length)];
  return s;
}
