const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are uuids; anything else can name no row, and must not reach a uuid column as a cast error. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

let lastMs = 0;
let sequence = 0;

/** Random bytes drawn 4 KiB at a time (one getRandomValues per 512 ids, not one per id); each byte used once. */
const randomPool = new Uint8Array(4096);
let randomAt = randomPool.length;
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/**
 * A UUIDv7 (RFC 9562): time-ordered, with a 12-bit sequence (method 1) so ids minted in one
 * process within one millisecond still sort in minting order. Rows that share a timestamp
 * (a feed ordered by time, then id) then keep the order they were written in.
 */
export function uuidv7(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    sequence = Math.floor(Math.random() * 0x400); // random start, leaving room to count up
  } else if (++sequence > 0xfff) {
    lastMs++; // more than 3,000 ids in one millisecond: borrow the next one
    sequence = 0;
  }
  if (randomAt + 8 > randomPool.length) {
    crypto.getRandomValues(randomPool);
    randomAt = 0;
  }
  const r = randomPool;
  const at = randomAt;
  randomAt += 8;
  let time = '';
  for (let i = 5; i >= 0; i--) time += HEX[Math.floor(lastMs / 2 ** (8 * i)) & 0xff];
  const seq = HEX[0x70 | (sequence >> 8)] + HEX[sequence & 0xff];
  const variant = HEX[0x80 | (r[at] & 0x3f)] + HEX[r[at + 1]];
  let rest = '';
  for (let i = 2; i < 8; i++) rest += HEX[r[at + i]];
  return `${time.slice(0, 8)}-${time.slice(8)}-${seq}-${variant}-${rest}`;
}
