import { Redis } from 'ioredis';
import { type Answer, call, eventually, expectEnvelope, newTenant, platform } from './support/client.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

describe('API keys, rate limit and idempotency at the gateway', () => {
  test('a secret key authenticates API calls; a missing or unknown key is a 401', async () => {
    const t = await newTenant();
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).status).toBe(200);
    expectEnvelope(await call('GET', '/contacts'), 401, 'INVALID_API_KEY');
    expectEnvelope(await call('GET', '/contacts', undefined, { key: 'sk_not_a_real_key' }), 401, 'INVALID_API_KEY');
    expectEnvelope(
      await call('GET', '/contacts', undefined, { headers: { authorization: 'Basic abc' } }),
      401,
      'INVALID_API_KEY',
    );
  });

  test('the wrong key type is INVALID_API_KEY and the message names the secret key', async () => {
    const t = await newTenant();
    const res = await call('GET', '/contacts', undefined, { key: t.publicKey });
    expectEnvelope(res, 401, 'INVALID_API_KEY');
    expect(res.body.error.message).toContain('sk_');
    // /v1/track takes either key (DESIGN.md; server-side libraries hold the secret key).
    expect((await call('POST', '/v1/track', { email: 'a@example.com', event: 'x' }, { key: t.secretKey })).status).toBe(
      200,
    );
    expect((await call('POST', '/v1/track', { email: 'a@example.com', event: 'x' }, { key: t.publicKey })).status).toBe(
      200,
    );
  });

  test('regenerate-keys rotates both keys: the old ones stop working within seconds', async () => {
    const t = await newTenant();
    expect((await call('GET', '/contacts', undefined, { key: t.secretKey })).status).toBe(200);
    const rotated = await call('POST', `/users/@me/projects/${t.projectId}/regenerate-keys`, undefined, {
      cookie: t.cookie,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secretKey).toMatch(/^sk_/);
    expect(rotated.body.secretKey).not.toBe(t.secretKey);
    expect(rotated.body.publicKey).not.toBe(t.publicKey);
    await eventually(
      async () => ((await call('GET', '/contacts', undefined, { key: t.secretKey })).status === 401 ? true : undefined),
      10_000,
      'old key rejected',
    );
    await eventually(
      async () =>
        (await call('POST', '/v1/track', { email: 'a@example.com', event: 'x' }, { key: t.publicKey })).status === 401
          ? true
          : undefined,
      10_000,
      'old public key rejected',
    );
    expect((await call('GET', '/contacts', undefined, { key: rotated.body.secretKey })).status).toBe(200);
  });

  test('a rotation reaches every gateway replica: one caching keys for a minute drops the old ones', async () => {
    // A second replica with no Redis keeps keys in-process for its whole KEY_CACHE_TTL_SECONDS.
    const { REDIS_URL: _, ...shared } = platform.env;
    const port = await freePort();
    const replica = startPlatform(
      ['gateway'],
      { ...shared, PORT: String(port), KEY_CACHE_TTL_SECONDS: '60' },
      'gw-rotate',
    );
    try {
      const baseUrl = `http://127.0.0.1:${port}`;
      await waitFor('second gateway', () => httpOk(`${baseUrl}/healthz`), replica);
      const t = await newTenant();
      expect((await call('GET', '/contacts', undefined, { key: t.secretKey, baseUrl })).status).toBe(200);
      const rotated = await call('POST', `/users/@me/projects/${t.projectId}/regenerate-keys`, undefined, {
        cookie: t.cookie,
      });
      expect(rotated.status).toBe(200);
      await eventually(
        async () =>
          (await call('GET', '/contacts', undefined, { key: t.secretKey, baseUrl })).status === 401 || undefined,
        10_000,
        'the old key refused by the other replica',
      );
      expect((await call('GET', '/contacts', undefined, { key: rotated.body.secretKey, baseUrl })).status).toBe(200);
    } finally {
      await stopProcess(replica);
    }
  });

  test("another project's contact id is a 404, never a leak", async () => {
    const a = await newTenant();
    const b = await newTenant();
    const created = await call('POST', '/contacts', { email: 'private@example.com' }, { key: a.secretKey });
    expect(created.status).toBe(201);
    expectEnvelope(
      await call('GET', `/contacts/${created.body.id}`, undefined, { key: b.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expectEnvelope(
      await call('PATCH', `/contacts/${created.body.id}`, { subscribed: false }, { key: b.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expectEnvelope(
      await call('DELETE', `/contacts/${created.body.id}`, undefined, { key: b.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expect((await call('GET', `/contacts/${created.body.id}`, undefined, { key: a.secretKey })).body.subscribed).toBe(
      true,
    );
  });

  test('Idempotency-Key replays the same request and refuses a different one with 409', async () => {
    const t = await newTenant();
    const headers = { 'idempotency-key': `order-${Date.now()}` };
    const first = await call(
      'POST',
      '/v1/track',
      { email: 'idem@example.com', event: 'purchase' },
      { key: t.publicKey, headers },
    );
    expect(first.status).toBe(200);
    const again = await call(
      'POST',
      '/v1/track',
      { event: 'purchase', email: 'idem@example.com' },
      { key: t.publicKey, headers },
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');

    const other = await call(
      'POST',
      '/v1/track',
      { email: 'idem@example.com', event: 'refund' },
      { key: t.publicKey, headers },
    );
    expectEnvelope(other, 409, 'IDEMPOTENCY_KEY_REUSED');
    expect(other.body.error.details).toMatchObject({
      key: headers['idempotency-key'],
      originalRequest: { method: 'POST', path: '/v1/track' },
      originalStatusCode: 200,
    });
    expect(Date.parse(other.body.error.details.originalRequestAt)).not.toBeNaN();

    const events = await call('GET', '/events?name=purchase', undefined, { key: t.secretKey });
    expect(events.body.data).toHaveLength(1);
    expectEnvelope(
      await call(
        'POST',
        '/v1/track',
        { email: 'idem@example.com', event: 'x' },
        { key: t.publicKey, headers: { 'idempotency-key': 'x'.repeat(256) } },
      ),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('concurrent duplicates with one Idempotency-Key execute once', async () => {
    const t = await newTenant();
    const headers = { 'idempotency-key': `race-${Date.now()}` };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        call('POST', '/v1/track', { email: 'race@example.com', event: 'race' }, { key: t.publicKey, headers }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.body.data.event)).size).toBe(1);
    const events = await call('GET', '/events?name=race', undefined, { key: t.secretKey });
    expect(events.body.data).toHaveLength(1);
  });

  test('the same key in two projects is two different requests', async () => {
    const a = await newTenant();
    const b = await newTenant();
    const headers = { 'idempotency-key': 'shared-key' };
    expect(
      (await call('POST', '/v1/track', { email: 'x@example.com', event: 'a' }, { key: a.publicKey, headers })).status,
    ).toBe(200);
    expect(
      (await call('POST', '/v1/track', { email: 'y@example.com', event: 'b' }, { key: b.publicKey, headers })).status,
    ).toBe(200);
  });

  test('each route family has its own per-project budget; 429 with Retry-After (gateway with low limits)', async () => {
    const port = await freePort();
    const budgets = { RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_TRACK_PER_MINUTE: '3', RATE_LIMIT_SEND_PER_MINUTE: '4' };
    const env = { ...platform.env, PORT: String(port), ...budgets };
    const gateway = startPlatform(['gateway'], env, 'gateway-ratelimit');
    try {
      const baseUrl = `http://127.0.0.1:${port}`;
      await waitFor('rate-limited gateway', () => httpOk(`${baseUrl}/healthz`), gateway);
      const t = await newTenant();
      const other = await newTenant();
      const statuses: number[] = [];
      let limited: Answer | undefined;
      for (let i = 0; i < 12 && !limited; i++) {
        const res = await call('GET', '/contacts', undefined, { key: t.secretKey, baseUrl });
        statuses.push(res.status);
        if (res.status === 429) limited = res;
      }
      expect(statuses.slice(0, 5).every((s) => s === 200)).toBe(true);
      expect(limited).toBeDefined();
      expectEnvelope(limited!, 429, 'RATE_LIMIT_EXCEEDED');
      expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(limited!.body.error.details.retryAfter).toBeGreaterThan(0);
      expect((await call('GET', '/contacts', undefined, { key: other.secretKey, baseUrl })).status).toBe(200);

      // Ingestion and sending have budgets of their own: the spent management budget does not touch them.
      const event = { email: 'budget@example.com', event: 'x' };
      const track = () => call('POST', '/v1/track', event, { key: t.publicKey, baseUrl });
      const tracked = [await track(), await track(), await track(), await track()];
      expect(tracked.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
      expect(tracked.map((r) => r.headers.get('x-ratelimit-limit'))).toEqual(['3', '3', '3', '3']);
      expect(tracked[0].headers.get('x-ratelimit-remaining')).toBe('2');
      expectEnvelope(tracked[3], 429, 'RATE_LIMIT_EXCEEDED');
      expect(tracked[3].body.error.details).toMatchObject({ budget: 'track', limit: 3 });
      const sent = await call('POST', '/v1/send', {}, { key: t.secretKey, baseUrl });
      expect(sent.status).not.toBe(429);
      expect(sent.headers.get('x-ratelimit-limit')).toBe('4');
      expect(sent.headers.get('x-ratelimit-remaining')).toBe('3');
      expect((await call('GET', '/contacts', undefined, { key: t.secretKey, baseUrl })).status).toBe(429);

      // The shared buckets live in Redis under the deployment's prefix (BUS_PREFIX).
      const redis = new Redis(platform.env.REDIS_URL);
      try {
        const keys = await redis.keys(`${platform.env.BUS_PREFIX}:rl:*:${t.projectId}`);
        expect(keys.map((k) => k.split(':').at(-2)).sort()).toEqual(['api', 'send', 'track']);
      } finally {
        redis.disconnect();
      }
    } finally {
      await stopProcess(gateway);
    }
  });

  test('/v1/send reads its large body only after the key is checked', async () => {
    const t = await newTenant();
    const big = JSON.stringify({ to: 'a@example.com', subject: 's', body: 'x'.repeat(3_000_000) });
    expectEnvelope(await call('POST', '/v1/send', undefined, { raw: big }), 401, 'INVALID_API_KEY');
    expectEnvelope(await call('POST', '/v1/send', undefined, { raw: '{"to":', key: t.secretKey }), 400, 'BAD_REQUEST');
    expectEnvelope(await call('POST', '/v1/send', undefined, { raw: big, key: t.publicKey }), 401, 'INVALID_API_KEY');
  });

  test('oversized bodies are a 413 in the envelope', async () => {
    const t = await newTenant();
    const res = await call(
      'POST',
      '/contacts',
      { email: 'big@example.com', data: { blob: 'x'.repeat(1_200_000) } },
      { key: t.secretKey },
    );
    expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
  });
});
