import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { newTenant, platform, uniqueEmail } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';
import { ROOT } from './support/processes.js';

/** Internal teams call the services with plain gRPC, not Connect, from the .proto files: DESIGN.md decision 1. */
function serviceClient(service: 'identity' | 'messaging', name: string, port: string) {
  const def = protoLoader.loadSync(path.join(ROOT, `proto/svc/${service}/v1/${service}.proto`), {
    includeDirs: [path.join(ROOT, 'proto')],
    keepCase: false,
    enums: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as any;
  return new pkg.svc[service].v1[name](`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

const identityClient = () => serviceClient('identity', 'IdentityService', platform.env.IDENTITY_PORT);

/** Internal callers present SERVICE_TOKEN as a bearer token in the call's metadata. */
function serviceCredentials(token = platform.env.SERVICE_TOKEN): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (token) metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

const unary = (client: any, method: string, req: object, metadata = serviceCredentials()) =>
  new Promise<any>((resolve, reject) =>
    client[method](req, metadata, (err: grpc.ServiceError | null, res: any) => (err ? reject(err) : resolve(res))),
  );

describe('gRPC interoperability', () => {
  test('a @grpc/grpc-js client verifies an API key over gRPC', async () => {
    const t = await newTenant();
    const client = identityClient();
    try {
      const res = await unary(client, 'verifyApiKey', { key: t.secretKey });
      expect(res.projectId).toBe(t.projectId);
      expect(res.keyType).toBe('KEY_TYPE_SECRET');
    } finally {
      client.close();
    }
  });

  test('errors arrive as gRPC status codes', async () => {
    const client = identityClient();
    try {
      await expect(unary(client, 'verifyApiKey', { key: 'sk_unknown' })).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
    } finally {
      client.close();
    }
  });

  test('a call without the service token, or with a wrong one, is UNAUTHENTICATED', async () => {
    const t = await newTenant();
    const client = identityClient();
    try {
      const unauthenticated = { code: grpc.status.UNAUTHENTICATED };
      await expect(unary(client, 'verifyApiKey', { key: t.secretKey }, serviceCredentials(''))).rejects.toMatchObject(
        unauthenticated,
      );
      const wrong = serviceCredentials(`${platform.env.SERVICE_TOKEN}x`);
      await expect(unary(client, 'verifyApiKey', { key: t.secretKey }, wrong)).rejects.toMatchObject(unauthenticated);
    } finally {
      client.close();
    }
  });

  test('a @grpc/grpc-js client calls SendEmail: typed recipients, sender, headers, a bytes attachment', async () => {
    const t = await newTenant();
    const { domain } = await verifiedDomain(t);
    const to = uniqueEmail('grpc');
    const client = serviceClient('messaging', 'MessagingService', platform.env.MESSAGING_PORT);
    try {
      const res = await unary(client, 'sendEmail', {
        projectId: t.projectId,
        to: [{ mailbox: { email: to, name: 'Grpc Reader' } }],
        from: { text: `Grpc Sender <hi@${domain}>` },
        subject: 'Hello {{plan}}',
        body: '<p>Plan {{plan}}</p>',
        data: { fields: { plan: { stringValue: 'pro' } } },
        headers: { 'X-Grpc': 'yes' },
        attachments: [{ filename: 'a.txt', content: Buffer.from('raw bytes'), contentType: 'text/plain' }],
      });
      expect(res.emails).toEqual([expect.objectContaining({ contactEmail: to, emailId: expect.any(String) })]);
      const [mail] = await waitForMail(to);
      expect(mail.parsed.subject).toBe('Hello pro');
      expect(mail.parsed.from?.value[0]).toMatchObject({ name: 'Grpc Sender', address: `hi@${domain}` });
      expect(mail.parsed.headers.get('x-grpc')).toBe('yes');
      expect(mail.parsed.attachments.map((a) => a.content.toString())).toEqual(['raw bytes']);
      // The service's rules answer a grpc-js caller too: INVALID_ARGUMENT naming the field.
      const refused = unary(client, 'sendEmail', {
        projectId: t.projectId,
        to: [{ text: 'nope' }],
        subject: 's',
        body: 'b',
      });
      await expect(refused).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    } finally {
      client.close();
    }
  });

  test('the standard gRPC health service answers SERVING, without credentials (probes)', async () => {
    const def = protoLoader.loadSync(path.join(ROOT, 'proto/grpc/health/v1/health.proto'), { enums: String });
    const pkg = grpc.loadPackageDefinition(def) as any;
    const client = new pkg.grpc.health.v1.Health(
      `127.0.0.1:${platform.env.IDENTITY_PORT}`,
      grpc.credentials.createInsecure(),
    );
    try {
      expect((await unary(client, 'check', {}, new grpc.Metadata())).status).toBe('SERVING');
    } finally {
      client.close();
    }
  });
});
