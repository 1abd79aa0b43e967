import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { AppError } from '@svc/lib/errors';
import { envelopeOf } from './envelope.js';

// Requests Node's HTTP parser refuses before Express sees them (a URL or headers over 16 KB, a
// malformed request line) get the same JSON envelope as every other error, not an empty body.

const REASONS: Record<number, string> = { 400: 'Bad Request', 431: 'Request Header Fields Too Large' };

/** http.Server 'clientError' listener. */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const message = status === 431 ? 'The URL and headers must be at most 16 KB' : 'Malformed HTTP request';
  const id = `req_${randomUUID().replace(/-/g, '')}`;
  const body = JSON.stringify(envelopeOf(new AppError({ code: 'BAD_REQUEST', status, message }), id));
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
}
