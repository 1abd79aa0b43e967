import { readFileSync } from 'node:fs';
import { platform } from './support/client.js';

const version = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

describe('GET / and GET /healthz', () => {
  test('a browser gets a small page naming the version; an API client gets JSON', async () => {
    const page = await fetch(`${platform.gatewayUrl}/`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain(`Email engagement platform ${version}`);
    expect(html).toContain('/healthz');
    expect(html).toContain('href="/docs"');
    expect(html).toContain('href="/openapi.json"');
    // A newcomer who opens the URL the banner prints finds the web console.
    expect(html).toContain('href="/app"');

    const api = await fetch(`${platform.gatewayUrl}/`, { headers: { accept: 'application/json' } });
    expect(await api.json()).toMatchObject({
      version,
      api: { send: 'POST /v1/send' },
      links: { console: '/app', health: '/healthz', docs: '/docs', openapi: '/openapi.json' },
    });
  });

  test('/healthz answers ok without a key', async () => {
    const res = await fetch(`${platform.gatewayUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});
