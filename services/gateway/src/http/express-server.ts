import http, { IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';

/**
 * The app's HTTP server, whose requests and answers are born with the prototypes Express gives them. Express
 * sets those on every request (`Object.setPrototypeOf` on both objects), which costs V8 two new shapes each time:
 * about 12 µs of CPU a request in a micro-benchmark. When they are set already, it changes nothing.
 */
export function expressServer(app: Express): Server {
  // Node 20's constructors are plain functions, called on the new object below. A Node whose are classes gets
  // the plain server: Reflect.construct with the app's prototype as new.target measured 4x slower than Express.
  if ([IncomingMessage, ServerResponse].some((c) => Function.prototype.toString.call(c).startsWith('class'))) {
    return http.createServer(app);
  }
  function AppRequest(this: IncomingMessage, socket: Socket) {
    Reflect.apply(IncomingMessage, this, [socket]);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: ServerResponse, req: IncomingMessage, options?: object) {
    Reflect.apply(ServerResponse, this, [req, options]);
  }
  AppResponse.prototype = app.response;
  return http.createServer(
    {
      IncomingMessage: AppRequest as unknown as typeof IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof ServerResponse,
    },
    app,
  );
}
