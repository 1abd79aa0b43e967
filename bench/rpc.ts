/**
 * One Connect/gRPC hop between two processes, as the gateway calls contacts: `TrackEvent` (or, with
 * BENCH_BATCH=n, `TrackEvents` with n items per call, as the gateway's coalescing sends them) through
 * `createRpcClient` (context + bearer interceptors) to `startRpcServer` (metrics, context, service
 * auth, error interceptors) whose handler answers at once. Prints tracks/s, p50/p99 per call and the
 * CPU per track on each side. No database, no bus: the cost of the hop alone. CPU per track is the
 * figure a loaded box moves least.
 *
 *   node --import tsx bench/rpc.ts
 *   BENCH_INFLIGHT=50 BENCH_BATCH=20 BENCH_DURATION=10 node --import tsx bench/rpc.ts
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { createRpcClient } from '@svc/lib/rpc-client';
import { startRpcServer } from '@svc/lib/rpc-server';
import { createLogger } from '@svc/lib/logger';
import { runInContext, contextFrom } from '@svc/lib/request-context';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { cpuSeconds, fmt, machineLine, peakRssReport } from './support.js';

const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 50);
const BATCH = Number(process.env.BENCH_BATCH ?? 0);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const TOKEN = 'bench-service-token-0123456789abcdef';

async function server(): Promise<void> {
  const logger = createLogger('warn');
  const s = await startRpcServer({
    name: 'bench',
    host: '127.0.0.1',
    port: 0,
    logger,
    shutdownTimeoutMs: 1000,
    serviceToken: TOKEN,
    routes: (router) =>
      router.service(ContactsService, {
        async trackEvent(req) {
          return { contactId: req.projectId, eventId: req.email, timestamp: timestampFromDate(new Date()) };
        },
        async trackEvents(req) {
          return {
            results: req.items.map((i) => ({
              result: {
                case: 'tracked' as const,
                value: {
                  contactId: i.event!.projectId,
                  eventId: i.event!.email,
                  timestamp: timestampFromDate(new Date()),
                },
              },
            })),
          };
        },
      }),
  });
  process.send!({ port: s.port });
  // Exits on request rather than by signal, so `--cpu-prof` (inherited from the bench) writes its profile.
  process.on('message', (m) => m === 'stop' && void s.close().then(() => process.exit(0)));
}

async function client(port: number, seconds: number): Promise<{ calls: number; lat: number[] }> {
  const c = createRpcClient(ContactsService, `http://127.0.0.1:${port}`, { serviceToken: TOKEN, rpcTimeoutMs: 30_000 });
  const lat: number[] = [];
  let calls = 0;
  const until = performance.now() + seconds * 1000;
  const data = {
    kind: { case: 'structValue', value: { fields: { plan: { kind: { case: 'stringValue', value: 'pro' } } } } },
  };
  await Promise.all(
    Array.from({ length: INFLIGHT }, async (_, w) => {
      while (performance.now() < until) {
        const t = performance.now();
        const event = {
          projectId: '0194f6a2-0000-7000-8000-000000000000',
          email: `user-${w}-${calls}@bench.example.com`,
          event: 'page.viewed',
          data: data as never,
        };
        if (BATCH > 0) {
          const items = Array.from({ length: BATCH }, (_, i) => ({
            event,
            requestId: `req_${w}_${i}`,
            traceparent: '',
          }));
          await c.trackEvents({ items });
          calls += BATCH - 1;
        } else await runInContext(contextFrom({}), () => c.trackEvent(event));
        lat.push(performance.now() - t);
        calls++;
      }
    }),
  );
  return { calls, lat };
}

if (process.argv[2] === 'server') {
  void server();
} else {
  const child = fork(fileURLToPath(import.meta.url), ['server'], { execArgv: process.execArgv });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  console.log(machineLine());
  await client(port, 2); // warm-up
  const s0 = cpuSeconds(child.pid!);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const { calls, lat } = await client(port, DURATION);
  const secs = (performance.now() - t0) / 1000;
  const cc = process.cpuUsage(c0);
  const serverCpu = cpuSeconds(child.pid!) - s0;
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))];
  const clientMs = (cc.user + cc.system) / 1000;
  console.log(
    `${BATCH ? `TrackEvents of ${BATCH}` : 'unary TrackEvent'}, ${INFLIGHT} calls in flight: ${fmt(calls / secs)} ` +
      `tracks/s, p50 ${fmt(q(0.5), 2)} ms, p99 ${fmt(q(0.99), 2)} ms per call; CPU per track: ` +
      `client ${fmt(clientMs / calls, 3)} ms, server ${fmt((serverCpu * 1000) / calls, 3)} ms; ` +
      `client ${fmt((clientMs / 1000 / secs) * 100)}% server ${fmt((serverCpu / secs) * 100)}% of a core`,
  );
  console.log(peakRssReport({ server: child.pid }));
  child.send('stop');
}
