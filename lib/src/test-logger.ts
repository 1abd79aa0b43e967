import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** For tests: a real pino logger whose lines are kept as objects, to see what a component reported. */
export function capturingLogger(level = 'info'): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}
