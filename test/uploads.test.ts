import { deflateSync } from 'node:zlib';
import aws4 from 'aws4';
import { call, expectEnvelope, newTenant, platform, type Tenant } from './support/client.js';

// POST /uploads/image stores an image (the test platform sets S3_*: in the s3rver bucket on loopback; without S3_*
// in messaging's database); GET /u/{id} serves it publicly, cached forever.

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A real 1x1 red RGB PNG. */
function tinyPng(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.from([0, 0xff, 0, 0]))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A JFIF header (SOI, APP0) and EOI: the type is told by these bytes. */
const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
  Buffer.from('JFIF\0', 'latin1'),
  Buffer.from([0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xd9]),
]);

function form(bytes: Buffer, name: string, type: string, field = 'file'): FormData {
  const f = new FormData();
  f.append(field, new Blob([new Uint8Array(bytes)], { type }), name);
  return f;
}

const upload = (t: Tenant, f: FormData, key: string | null = t.secretKey) =>
  call('POST', '/uploads/image', undefined, { key: key ?? undefined, raw: f });

describe('image uploads', () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await newTenant();
  });

  test('a PNG is stored and served back byte-identical, publicly, with long-lived caching', async () => {
    const png = tinyPng();
    const res = await upload(t, form(png, 'dot.png', 'image/png'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ contentType: 'image/png', size: png.length });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.url).toBe(`${platform.env.PUBLIC_URL}/u/${res.body.id}`);

    const got = await fetch(`${platform.gatewayUrl}/u/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await got.arrayBuffer()).equals(png)).toBe(true);
  });

  test('with S3_* the bytes are in the bucket (uploads/<id>, signed), served from PUBLIC_URL/u/{id}', async () => {
    const png = tinyPng();
    const res = await upload(t, form(png, 'dot.png', 'image/png'));
    expect(res.status).toBe(201);
    const env = platform.env;
    const endpoint = new URL(env.S3_ENDPOINT);
    const path = `/${env.S3_BUCKET}/uploads/${res.body.id}`;
    const signedGet = (accessKeyId: string) => {
      const signed = aws4.sign(
        { host: endpoint.host, path, method: 'GET', service: 's3', region: env.S3_REGION },
        { accessKeyId, secretAccessKey: env.S3_SECRET_ACCESS_KEY },
      );
      const headers = Object.fromEntries(
        Object.entries(signed.headers ?? {})
          .filter(([k]) => k.toLowerCase() !== 'host')
          .map(([k, v]) => [k, String(v)]),
      );
      return fetch(`${env.S3_ENDPOINT}${path}`, { headers });
    };
    const inBucket = await signedGet(env.S3_ACCESS_KEY_ID);
    expect(inBucket.status).toBe(200);
    expect(inBucket.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await inBucket.arrayBuffer()).equals(png)).toBe(true);
    // The bucket checks the credentials (s3rver checks the access key of a SigV4 request, not its signature).
    expect((await signedGet('NOT-A-KEY')).status).toBe(403);
    const served = await fetch(`${platform.gatewayUrl}/u/${res.body.id}`);
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
  });

  test('a JPEG is told by its bytes, whatever its name and declared type', async () => {
    const res = await upload(t, form(JPEG, 'photo.bin', 'application/octet-stream'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ contentType: 'image/jpeg', size: JPEG.length });
    const got = await fetch(`${platform.gatewayUrl}/u/${res.body.id}`);
    expect(got.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await got.arrayBuffer()).equals(JPEG)).toBe(true);
  });

  test('SVG is refused (it can carry script)', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    const res = await upload(t, form(svg, 'logo.svg', 'image/svg+xml'));
    expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(res.body.error.message).toMatch(/SVG/);
  });

  test('text named .png and declared image/png is refused', async () => {
    const res = await upload(t, form(Buffer.from('hello, not an image'), 'x.png', 'image/png'));
    expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(res.body.error.message).toMatch(/not a PNG, JPEG, GIF or WebP/);
  });

  test('over 5 MB is a 413', async () => {
    const big = Buffer.concat([tinyPng(), Buffer.alloc(5 * 1024 * 1024)]);
    const res = await upload(t, form(big, 'big.png', 'image/png'));
    expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  test('no file is a 400; a file in another field too', async () => {
    expectEnvelope(await upload(t, new FormData()), 400, 'BAD_REQUEST');
    expect((await upload(t, form(tinyPng(), 'a.png', 'image/png', 'image'))).status).toBe(400);
  });

  test('without a key is a 401; the public key is not enough', async () => {
    const anon = await upload(t, form(tinyPng(), 'a.png', 'image/png'), null);
    expect(anon.status).toBe(401);
    expect(anon.body.success).toBe(false);
    const pub = await upload(t, form(tinyPng(), 'a.png', 'image/png'), t.publicKey);
    expect([401, 403]).toContain(pub.status);
  });

  test('an unknown id is a 404', async () => {
    const res = await call('GET', '/u/00000000-0000-4000-8000-000000000000');
    expectEnvelope(res, 404, 'RESOURCE_NOT_FOUND');
    expect((await call('GET', '/u/not-a-uuid')).status).toBe(404);
  });
});
