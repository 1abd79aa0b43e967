import type { Express, RequestHandler } from 'express';
import { AppError } from '@svc/lib/errors';

interface Layer {
  route?: { methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  match(path: string): unknown;
}

/** The methods the app's routes answer for `path`, walking nested routers. */
function methodsFor(stack: Layer[], path: string, found: Set<string>): void {
  for (const layer of stack) {
    if (layer.route) {
      if (!layer.match(path)) continue;
      for (const [method, on] of Object.entries(layer.route.methods)) {
        if (on && method !== '_all') found.add(method.toUpperCase());
      }
    } else if (layer.handle?.stack) {
      methodsFor(layer.handle.stack, path, found);
    }
  }
}

/**
 * A known path asked with a method it does not answer: 405 with `Allow`, instead of the
 * unknown route's 404. Placed after every router, before the 404.
 */
export function methodNotAllowed(app: Express): RequestHandler {
  return (req, res, next) => {
    const found = new Set<string>();
    methodsFor((app as unknown as { router: { stack: Layer[] } }).router.stack, req.path, found);
    if (found.size === 0) return next();
    if (found.has('GET')) found.add('HEAD');
    const allow = [...found].sort().join(', ');
    res.setHeader('Allow', allow);
    next(
      new AppError({
        code: 'METHOD_NOT_ALLOWED',
        status: 405,
        message: `${req.method} is not allowed on ${req.path}; allowed: ${allow}`,
        details: { allow: [...found].sort() },
      }),
    );
  };
}
