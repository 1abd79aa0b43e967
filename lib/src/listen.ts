import type { Server } from 'node:net';

/** A start-up failure that needs no stack trace: the message says what to do. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Starts listening and resolves once bound. A taken port rejects with `port 8080 is already in
 * use (gateway)` instead of a stack trace; Express 5 passes listen errors to its callback, which
 * must not be taken for success.
 */
export function listen(server: Server, port: number, host: string | undefined, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => {
      server.off('listening', ok);
      if (err.code === 'EADDRINUSE') {
        reject(new StartupError(`port ${port} is already in use (${what}); stop what uses it or set another port`));
      } else if (err.code === 'EACCES') {
        reject(
          new StartupError(`port ${port} needs privileges this process lacks (${what}); choose a port above 1024`),
        );
      } else reject(err);
    };
    const ok = () => {
      server.off('error', fail);
      resolve();
    };
    server.once('error', fail);
    server.once('listening', ok);
    server.listen(port, host);
  });
}
