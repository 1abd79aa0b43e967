import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { call, eventually, newTenant, platform } from './support/client.js';
import { freePort, ROOT, startPlatform, stopProcess } from './support/processes.js';

/** A plain Connect client of a service port, as anyone on the network could build one. */
function serviceClient<S extends DescService>(service: S, port: string, token?: string) {
  const bearer: Interceptor = (next) => (req) => {
    if (token !== undefined) req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
  return createClient(service, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}`, interceptors: [bearer] }));
}

async function codeOf(p: Promise<unknown>): Promise<Code | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe('service credentials on the internal RPC ports (distributed mode)', () => {
  test('ListContacts with no service token or a wrong one is UNAUTHENTICATED; with the token, it answers', async () => {
    const t = await newTenant();
    expect((await call('POST', '/contacts', { email: 'secret@example.com' }, { key: t.secretKey })).status).toBe(201);
    const port = platform.env.CONTACTS_PORT;
    const req = { projectId: t.projectId, limit: 10 };

    expect(await codeOf(serviceClient(ContactsService, port).listContacts(req))).toBe(Code.Unauthenticated);
    expect(await codeOf(serviceClient(ContactsService, port, '').listContacts(req))).toBe(Code.Unauthenticated);
    const wrong = `${platform.env.SERVICE_TOKEN.slice(0, -1)}!`;
    expect(await codeOf(serviceClient(ContactsService, port, wrong).listContacts(req))).toBe(Code.Unauthenticated);

    const listed = await serviceClient(ContactsService, port, platform.env.SERVICE_TOKEN).listContacts(req);
    expect(listed.contacts.map((c) => c.email)).toEqual(['secret@example.com']);
  });

  test('SendEmail without the service token is UNAUTHENTICATED and queues nothing', async () => {
    const t = await newTenant();
    const to = [{ form: { case: 'text' as const, value: 'refused-before-validation@example.com' } }];
    const request = { projectId: t.projectId, to, subject: 's', body: 'b' };
    const answer = serviceClient(MessagingService, platform.env.MESSAGING_PORT).sendEmail(request);
    expect(await codeOf(answer)).toBe(Code.Unauthenticated);
    const activity = await call('GET', '/activity', undefined, { key: t.secretKey });
    expect(activity.status).toBe(200);
    expect(activity.body.data).toEqual([]);
  });

  test('a distributed service started without SERVICE_TOKEN refuses to start with one clear line', async () => {
    const env = {
      DATABASE_URL: platform.env.DATABASE_URL,
      NATS_URL: '',
      REDIS_URL: '',
      SERVICE_TOKEN: '',
      CONTACTS_PORT: String(await freePort()),
    };
    const child = startPlatform(['contacts'], env, 'no-service-token');
    try {
      const code = child.exitCode ?? (await new Promise<number | null>((resolve) => child.once('exit', resolve)));
      expect(code).toBe(1);
      const log = path.join(ROOT, '.test-run', 'logs', 'no-service-token.log');
      const text = await eventually(
        async () => {
          const written = readFileSync(log, 'utf8');
          return written.includes('\n') ? written : undefined;
        },
        5_000,
        'the log line',
      );
      expect(text).toBe(
        'config error: SERVICE_TOKEN is required when DATABASE_URL is set (the shared secret of internal RPC calls)\n',
      );
    } finally {
      await stopProcess(child);
    }
  });
});
