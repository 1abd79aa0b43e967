import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, portOpen, waitFor } from './processes.js';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

/**
 * A nats-server with JetStream that a fault test owns: it can be started late, stopped and
 * started again on the same port and store directory, without touching the shared broker.
 */
export class PrivateNats {
  readonly storeDir = mkdtempSync(path.join(tmpdir(), 'nats-fault-'));
  private child?: ChildProcess;

  private constructor(readonly port: number) {}

  static async create(): Promise<PrivateNats> {
    return new PrivateNats(await freePort());
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.storeDir], {
      stdio: 'ignore',
    });
    this.child = child;
    await waitFor('nats-server', () => portOpen(this.port), child, 10_000);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  /** Loses the JetStream store (streams, consumers, messages), as a replaced volume would. Call while stopped. */
  wipeStore(): void {
    rmSync(this.storeDir, { recursive: true, force: true });
    mkdirSync(this.storeDir);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}
