import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, portOpen, waitFor } from './processes.js';

/**
 * A redis-server that a fault test owns (no persistence): it can be frozen (SIGSTOP), thawed,
 * killed and started again on the same port, empty, like a Redis that lost its data.
 */
export class PrivateRedis {
  private child?: ChildProcess;

  private constructor(readonly port: number) {}

  static async create(): Promise<PrivateRedis> {
    return new PrivateRedis(await freePort());
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    this.child = spawn(process.env.REDIS_SERVER_BIN ?? 'redis-server', args, { stdio: 'ignore' });
    await waitFor('redis-server', () => portOpen(this.port), this.child, 10_000);
  }

  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** SIGKILL: connections drop at once and the data is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  }
}
