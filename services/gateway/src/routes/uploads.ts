import type { Client } from '@connectrpc/connect';
import { badRequest } from '@svc/lib/errors';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { singleFileUpload } from '../http/file-upload.js';
import type { KeyGuards } from '../http/guards.js';
import { z } from 'zod';
import { ApiRouter, id } from '../http/api.js';

/**
 * POST /uploads/image (secret key): stores a PNG, JPEG, GIF or WebP in the messaging service's database;
 * the type is read from the bytes by messaging. GET /u/{id} serves it publicly, cacheable forever.
 */
export function uploadsRouter(messaging: Client<typeof MessagingService>, guards: KeyGuards, publicUrl: string) {
  const r = new ApiRouter();
  const upload = singleFileUpload(5 * 1024 * 1024, 'Images');
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
      upload(req, res, next);
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
