import multer from 'multer';
import type { Client } from '@connectrpc/connect';
import { AppError, badRequest } from '@svc/lib/errors';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { KeyGuards } from '../http/guards.js';
import { z } from 'zod';
import { ApiRouter, id } from '../http/api.js';

const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** One file part; a few small other fields are tolerated and anything beyond is refused before it is buffered. */
const UPLOAD_LIMITS = {
  fileSize: MAX_IMAGE_BYTES,
  files: 1,
  fields: 10,
  fieldSize: 1024,
  fieldNameSize: 100,
  parts: 11,
  headerPairs: 20,
};
const UPLOAD_TOO_LARGE: Record<string, string> = {
  LIMIT_FILE_SIZE: `Images are limited to ${MAX_IMAGE_BYTES} bytes (5 MB)`,
  LIMIT_FIELD_VALUE: `Form fields are limited to ${UPLOAD_LIMITS.fieldSize} bytes`,
  LIMIT_FIELD_COUNT: `At most ${UPLOAD_LIMITS.fields} form fields besides the file`,
  LIMIT_PART_COUNT: `At most ${UPLOAD_LIMITS.parts} form parts`,
};

function uploadError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = err instanceof multer.MulterError ? err.code : undefined;
  if (code && UPLOAD_TOO_LARGE[code]) {
    return new AppError({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: UPLOAD_TOO_LARGE[code] });
  }
  return badRequest(`Upload rejected: ${code ? (err as Error).message : 'malformed multipart/form-data body'}`);
}

/**
 * POST /uploads/image (secret key): stores a PNG, JPEG, GIF or WebP in the messaging service's database;
 * the type is read from the bytes by messaging. GET /u/{id} serves it publicly, cacheable forever.
 */
export function uploadsRouter(messaging: Client<typeof MessagingService>, guards: KeyGuards, publicUrl: string) {
  const r = new ApiRouter();
  const upload = multer({ storage: multer.memoryStorage(), limits: UPLOAD_LIMITS }).single('file');
  const base = publicUrl.replace(/\/+$/, '');

  r.post(
    '/uploads/image',
    {
      summary: 'Upload an image for templates (PNG, JPEG, GIF, WebP)',
      tag: 'Uploads',
      auth: 'secret',
      bodyType: 'multipart/form-data',
      body: z.object({ file: z.string().openapi({ format: 'binary' }) }),
      responses: { 201: z.object({ url: z.string().url(), id, contentType: z.string(), size: z.number().int() }) },
      errors: [400, 413, 415],
    },
    guards.secret,
    (req, res, next) => {
      if (!req.is('multipart/form-data')) {
        next(badRequest('Send the image as multipart/form-data in a field named "file"'));
        return;
      }
      upload(req, res, (err: unknown) => next(err ? uploadError(err) : undefined));
    },
    async (req, res) => {
      if (!req.file) throw badRequest('Send the image as multipart/form-data in a field named "file"');
      const out = await messaging.createUpload({
        projectId: req.projectId,
        content: req.file.buffer,
        filename: req.file.originalname,
      });
      const u = out.upload!;
      res.status(201).json({ url: `${base}/u/${u.id}`, id: u.id, contentType: u.contentType, size: Number(u.size) });
    },
  );

  r.get(
    '/u/:id',
    {
      summary: 'An uploaded image (public, cacheable forever)',
      tag: 'Uploads',
      auth: 'none',
      responses: {
        200: { description: 'The image', content: { 'image/*': z.string().openapi({ format: 'binary' }) } },
      },
      errors: [404],
    },
    async (req, res) => {
      const out = await messaging.getUpload({ id: String(req.params.id) });
      res
        .status(200)
        .set('Content-Type', out.upload!.contentType)
        .set('Cache-Control', 'public, max-age=31536000, immutable')
        .set('X-Content-Type-Options', 'nosniff')
        .set('Content-Security-Policy', "default-src 'none'")
        .send(Buffer.from(out.content));
    },
  );

  return r.router;
}
