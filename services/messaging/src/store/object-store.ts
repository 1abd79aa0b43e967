import aws4 from 'aws4';
import { serviceUnavailable } from '@svc/lib/errors';

/** Where upload bytes live when not in the database (README "Image uploads"). */
export interface ObjectStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** undefined when the object does not exist. */
  get(key: string): Promise<Buffer | undefined>;
}

export interface S3Settings {
  /** e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:9000`; default: AWS for the region. */
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (MinIO, s3rver, most self-hosted). */
  forcePathStyle: boolean;
}

const REQUEST_TIMEOUT_MS = 10_000;

/**
 * An S3-compatible bucket over plain HTTP requests signed with Signature V4 (the `aws4` package): PutObject and
 * GetObject are all uploads need. Unreachable or failing storage is a 503 (retry), never a 500.
 */
export class S3ObjectStore implements ObjectStore {
  private readonly base: URL;

  constructor(private readonly s: S3Settings) {
    this.base = new URL(s.endpoint ?? `https://s3.${s.region}.amazonaws.com`);
  }

  private url(key: string): URL {
    const path = key.split('/').map(encodeURIComponent).join('/');
    if (this.s.forcePathStyle) return new URL(`${this.base.origin}/${encodeURIComponent(this.s.bucket)}/${path}`);
    return new URL(`${this.base.protocol}//${this.s.bucket}.${this.base.host}/${path}`);
  }

  private async request(method: 'GET' | 'PUT', key: string, body?: Buffer, contentType?: string): Promise<Response> {
    const url = this.url(key);
    const signed = aws4.sign(
      {
        host: url.host,
        path: url.pathname,
        method,
        service: 's3',
        region: this.s.region,
        headers: contentType ? { 'content-type': contentType } : {},
        ...(body ? { body } : {}),
      },
      { accessKeyId: this.s.accessKeyId, secretAccessKey: this.s.secretAccessKey },
    );
    const headers = Object.fromEntries(
      Object.entries(signed.headers ?? {})
        .filter(([name]) => name.toLowerCase() !== 'host' && name.toLowerCase() !== 'content-length')
        .map(([name, value]) => [name, String(value)]),
    );
    try {
      return await fetch(url, {
        method,
        headers,
        body: body ? new Uint8Array(body) : undefined,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch {
      throw serviceUnavailable('Object storage is unreachable; retry shortly');
    }
  }

  async put(key: string, bytes: Buffer, contentType: string): Promise<void> {
    const res = await this.request('PUT', key, bytes, contentType);
    await res.arrayBuffer();
    if (!res.ok) throw serviceUnavailable(`Object storage refused the upload (${res.status}); retry shortly`);
  }

  async get(key: string): Promise<Buffer | undefined> {
    const res = await this.request('GET', key);
    if (res.status === 404) {
      await res.arrayBuffer();
      return undefined;
    }
    if (!res.ok) {
      await res.arrayBuffer();
      throw serviceUnavailable(`Object storage answered ${res.status}; retry shortly`);
    }
    return Buffer.from(await res.arrayBuffer());
  }
}
