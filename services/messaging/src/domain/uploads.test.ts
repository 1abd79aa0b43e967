import { sniffImageType } from './uploads.js';

describe('sniffImageType', () => {
  test.each([
    ['image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])],
    ['image/jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0, 0])],
    ['image/gif', Buffer.from('GIF89a\x01\x00', 'latin1')],
    ['image/gif', Buffer.from('GIF87a\x01\x00', 'latin1')],
    ['image/webp', Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1')],
  ])('%s by its magic bytes', (type, bytes) => {
    expect(sniffImageType(bytes)).toBe(type);
  });

  test.each([
    ['SVG', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')],
    ['text', Buffer.from('hello')],
    ['a RIFF that is not WebP', Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1')],
    ['a truncated PNG signature', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
    ['nothing', Buffer.alloc(0)],
  ])('%s is not an accepted image', (_what, bytes) => {
    expect(sniffImageType(bytes)).toBeUndefined();
  });
});
