import { randomUUID } from 'node:crypto';
import { AppError, badRequest, notFound, serviceUnavailable } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { ObjectStore } from '../store/object-store.js';
import type { UploadRow, UploadsStore } from '../store/uploads-store.js';

/** Images are limited to 5 MB (the gateway refuses larger bodies first, with the same 413). */
export const MAX_UPLOAD_BYTES = 5 * 1024 * 1024;

const startsWith = (b: Buffer, sig: number[], at = 0) => sig.every((v, i) => b[at + i] === v);

/**
 * The image type told by the first bytes; the file name and the declared content type are not believed.
 * SVG is not accepted: it is XML that can carry script, and the URL is served from the API's origin.
 */
export function sniffImageType(b: Buffer): string | undefined {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  const head = b.subarray(0, 6).toString('latin1');
  if (head === 'GIF87a' || head === 'GIF89a') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') {
    return 'image/webp';
  }
  return undefined;
}

const unsupported = (message: string) => new AppError({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415, message });

export interface StoredUpload extends UploadRow {
  bytes: Buffer;
}

const objectKey = (id: string) => `uploads/${id}`;

export class Uploads {
  /** With `objects` (S3_BUCKET set) new uploads go to the bucket; earlier ones stay where they were written. */
  constructor(
    private readonly store: UploadsStore,
    private readonly objects?: ObjectStore,
  ) {}

  async create(projectId: string, bytes: Buffer): Promise<UploadRow> {
    if (bytes.length === 0) throw badRequest('The file is empty');
    if (bytes.length > MAX_UPLOAD_BYTES) {
      throw new AppError({
        code: 'PAYLOAD_TOO_LARGE',
        status: 413,
        message: `Images are limited to ${MAX_UPLOAD_BYTES} bytes (5 MB)`,
      });
    }
    const contentType = sniffImageType(bytes);
    if (!contentType) {
      const text = bytes.subarray(0, 512).toString('latin1').trimStart().toLowerCase();
      if (text.startsWith('<svg') || (text.startsWith('<?xml') && text.includes('<svg'))) {
        throw unsupported('SVG images are not accepted (they can carry script); upload a PNG, JPEG, GIF or WebP');
      }
      throw unsupported('The file is not a PNG, JPEG, GIF or WebP image (the type is read from its content)');
    }
    const id = randomUUID();
    // The object first: a row never points at bytes that are not there (a failed insert leaves an unused object).
    if (this.objects) await this.objects.put(objectKey(id), bytes, contentType);
    return this.store.insert({
      id,
      projectId,
      contentType,
      bytes: this.objects ? null : Buffer.from(bytes),
      size: bytes.length,
    });
  }

  async get(id: string): Promise<StoredUpload> {
    const row = isUuid(id) ? await this.store.get(id) : undefined;
    if (!row) throw notFound('Upload', id);
    if (row.bytes) return { ...row, bytes: row.bytes };
    if (!this.objects) throw serviceUnavailable('This upload is in object storage, which is not configured (S3_*)');
    const bytes = await this.objects.get(objectKey(row.id));
    if (!bytes) throw notFound('Upload', id);
    return { ...row, bytes };
  }
}
