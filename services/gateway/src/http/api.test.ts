import type { AddressInfo } from 'node:net';
import express from 'express';
import { z } from 'zod';
import { capturingLogger } from '@svc/lib/test-logger';
import { ApiRouter, declaredOperations, notInDocument, openApiDocument, servedRoutes } from './api.js';
import { errorHandler } from './envelope.js';

// A route declared with `validate: true`: its zod schemas are the validator (422 in the envelope) and the
// document's schemas at once. Served by real Express on loopback.

function app() {
  const api = new ApiRouter();
  api.post(
    '/things/:id',
    {
      summary: 'Create a thing',
      tag: 'Things',
      auth: 'none',
      validate: true,
      query: z.object({ dryRun: z.enum(['true', 'false']).optional() }),
      body: z.object({ name: z.string().min(1), size: z.number().int().default(1) }),
      responses: { 201: z.object({ id: z.string(), name: z.string(), size: z.number().int() }) },
    },
    (req, res) => {
      res.status(201).json({ id: req.params.id, ...req.body, dryRun: req.validQuery?.dryRun ?? null });
    },
  );
  const pages = express.Router();
  pages.get('/page', (_req, res) => {
    res.send('page');
  });
  const a = express();
  a.use(express.json());
  a.use(api.router);
  a.use(notInDocument(pages, 'a page'));
  a.use(errorHandler(capturingLogger().logger));
  return a;
}

async function serve<T>(a: express.Express, fn: (base: string) => Promise<T>): Promise<T> {
  const server = a.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    return await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.close();
  }
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('ApiRouter', () => {
  test('validate: true parses the body and query with the declared schemas', async () => {
    await serve(app(), async (base) => {
      const ok = await post(`${base}/things/t1?dryRun=true`, { name: 'box' });
      expect(ok.status).toBe(201);
      expect(await ok.json()).toEqual({ id: 't1', name: 'box', size: 1, dryRun: 'true' });

      const bad = await post(`${base}/things/t1`, { name: '', size: 1.5 });
      expect(bad.status).toBe(422);
      const body = await bad.json();
      expect(body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', statusCode: 422 } });
      expect(body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(['name', 'size']);

      const badQuery = await post(`${base}/things/t1?dryRun=maybe`, { name: 'box' });
      expect(badQuery.status).toBe(422);
      expect((await badQuery.json()).error.errors[0]).toMatchObject({ field: 'dryRun', code: 'invalid_enum_value' });
    });
  });

  test('the declaration is the operation in the document; excluded routers are listed with their reason', () => {
    const a = app();
    expect(declaredOperations(a).map((o) => `${o.method} ${o.path}`)).toEqual(['post /things/:id']);
    expect(servedRoutes(a)).toEqual([
      { method: 'post', path: '/things/:id' },
      { method: 'get', path: '/page', excluded: 'a page' },
    ]);
    const doc = openApiDocument(a, { version: '1.0.0', serverUrl: 'http://localhost' });
    const op = doc.paths?.['/things/{id}']?.post;
    expect(op?.parameters?.map((p) => ('name' in p ? p.name : ''))).toEqual(['id', 'dryRun']);
    expect(Object.keys(op?.responses ?? {}).sort()).toEqual(['201', '400', '413', '422']);
    expect(op?.requestBody).toMatchObject({ required: true, content: { 'application/json': {} } });
    expect(doc.paths?.['/page']).toBeUndefined();
  });
});
