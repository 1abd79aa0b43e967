import type { ChildProcess } from 'node:child_process';
import { connect } from 'nats';
import pg from 'pg';
import { stopProcess } from './support/processes.js';

export default async function teardown(): Promise<void> {
  const platform = (globalThis as Record<string, unknown>).__PLATFORM__ as
    | {
        children: ChildProcess[];
        info: { runId: string; env: Record<string, string> };
        close?: Array<() => Promise<void>>;
      }
    | undefined;
  if (!platform) return;
  await Promise.all(platform.children.map((c) => stopProcess(c)));
  await Promise.all((platform.close ?? []).map((close) => close().catch(() => undefined)));
  const { runId, env } = platform.info;
  if (process.env.TEST_KEEP_DATA) return;

  // The run's databases live on its server (TEST_DATABASE_URL's, else the local one).
  const server = new URL(env.DATABASE_URL);
  server.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: server.toString() });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
    `${new URL(env.DATABASE_URL).pathname.slice(1) || runId}%`,
  ]);
  for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  await admin.end();

  const nc = await connect({ servers: env.NATS_URL });
  const jsm = await nc.jetstreamManager();
  for await (const s of jsm.streams.list()) {
    if (s.config.name.startsWith(`${runId}_`)) await jsm.streams.delete(s.config.name);
  }
  await nc.drain();
}
