import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { newTenant, platform } from './support/client.js';
import { ROOT } from './support/processes.js';

/** Internal teams call the services with plain gRPC, not Connect: DESIGN.md decision 1. */
function identityClient() {
  const def = protoLoader.loadSync(path.join(ROOT, 'proto/svc/identity/v1/identity.proto'), {
    includeDirs: [path.join(ROOT, 'proto')],
    keepCase: false,
    enums: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as any;
  return new pkg.svc.identity.v1.IdentityService(`127.0.0.1:${platform.env.IDENTITY_PORT}`, grpc.credentials.createInsecure());
}

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
      await expect(unary(client, 'verifyApiKey', { key: 'sk_unknown' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    } finally {
      client.close();
    }
  });

  test('a call without the service token, or with a wrong one, is UNAUTHENTICATED', async () => {
    const t = await newTenant();
    const client = identityClient();
    try {
      const unauthenticated = { code: grpc.status.UNAUTHENTICATED };
      await expect(unary(client, 'verifyApiKey', { key: t.secretKey }, serviceCredentials(''))).rejects.toMatchObject(unauthenticated);
      const wrong = serviceCredentials(`${platform.env.SERVICE_TOKEN}x`);
      await expect(unary(client, 'verifyApiKey', { key: t.secretKey }, wrong)).rejects.toMatchObject(unauthenticated);
    } finally {
      client.close();
    }
  });

  test('the standard gRPC health service answers SERVING, without credentials (probes)', async () => {
    const def = protoLoader.loadSync(path.join(ROOT, 'proto/grpc/health/v1/health.proto'), { enums: String });
    const pkg = grpc.loadPackageDefinition(def) as any;
    const client = new pkg.grpc.health.v1.Health(`127.0.0.1:${platform.env.IDENTITY_PORT}`, grpc.credentials.createInsecure());
    try {
      expect((await unary(client, 'check', {}, new grpc.Metadata())).status).toBe('SERVING');
    } finally {
      client.close();
    }
  });
});
