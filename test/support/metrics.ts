import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './processes.js';

// A service process's Prometheus metrics (the test platform gives each one a METRICS_PORT; test/metrics.test.ts).

const metricsUrls: Record<string, string> = JSON.parse(
  readFileSync(path.join(ROOT, '.test-run', 'platform.json'), 'utf8'),
).metricsUrls;

/** The value of a counter or gauge of `service` with exactly these labels (0 while the series does not exist). */
export async function metricValue(service: string, name: string, labels: Record<string, string>): Promise<number> {
  const res = await fetch(metricsUrls[service]);
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  for (const line of (await res.text()).split('\n')) {
    if (line.startsWith(`${name}{${wanted}} `)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}
