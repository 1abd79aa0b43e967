import type { RequestHandler } from 'express';
import multer from 'multer';
import { AppError, badRequest } from '@svc/lib/errors';

/**
 * Middleware reading one multipart/form-data file part named `file` of at most `maxBytes` into memory
 * (`req.file`). Other form fields are ignored, so a few small ones are tolerated and anything beyond is refused
 * before it is buffered. Failures in the envelope: 413 past a size or count limit (`what` names the file in the
 * size message, e.g. "CSV files"), 400 for a malformed form.
 */
export function singleFileUpload(maxBytes: number, what: string): RequestHandler {
  const limits = {
    fileSize: maxBytes,
    files: 1,
    fields: 10,
    fieldSize: 1024,
    fieldNameSize: 100,
    parts: 11,
    headerPairs: 20,
  };
  const tooLarge: Record<string, string> = {
    LIMIT_FILE_SIZE: `${what} are limited to ${maxBytes} bytes (${maxBytes / 2 ** 20} MB)`,
    LIMIT_FIELD_VALUE: `Form fields are limited to ${limits.fieldSize} bytes`,
    LIMIT_FIELD_COUNT: `At most ${limits.fields} form fields besides the file`,
    LIMIT_PART_COUNT: `At most ${limits.parts} form parts`,
  };
  const uploadError = (err: unknown): AppError => {
    if (err instanceof AppError) return err;
    const code = err instanceof multer.MulterError ? err.code : undefined;
    if (code && tooLarge[code])
      return new AppError({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: tooLarge[code] });
    return badRequest(`Upload rejected: ${code ? (err as Error).message : 'malformed multipart/form-data body'}`);
  };
  const upload = multer({ storage: multer.memoryStorage(), limits }).single('file');
  return (req, res, next) => upload(req, res, (err: unknown) => next(err ? uploadError(err) : undefined));
}
