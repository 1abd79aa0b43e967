const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are uuids; anything else can name no row, and must not reach a uuid column as a cast error. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

let lastMs = 0;
let sequence = 0;

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
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  const ms = lastMs;
  for (let i = 5; i >= 0; i--) bytes[5 - i] = Math.floor(ms / 2 ** (8 * i)) & 0xff;
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
