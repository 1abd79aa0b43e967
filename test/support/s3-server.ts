import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './processes.js';

/** s3rver's fixed credentials: it checks every request's Signature V4 against them. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/**
 * A real S3-compatible server on loopback (the `s3rver` npm package, files in a temporary directory) with one
 * bucket: the platform stores uploads in it through S3_*.
 */
export async function startTestS3(bucket: string): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  // s3rver ships no types; its constructor and run/close are all the tests use.
  const moduleName = 's3rver';
  const { default: S3rver } = (await import(moduleName)) as {
    default: new (o: Record<string, unknown>) => { run(): Promise<unknown>; close(): Promise<void> };
  };
  const directory = mkdtempSync(path.join(tmpdir(), 's3rver-'));
  const port = await freePort();
  const server = new S3rver({
    port,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  await server.run();
  return {
    env: {
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_BUCKET: bucket,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
    },
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
