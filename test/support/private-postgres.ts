import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './processes.js';

const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;

/** PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user. */
function run(tool: string, args: string[]): string {
  const cmd = path.join(BIN, tool);
  return asRoot
    ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8', stdio: 'pipe' })
    : execFileSync(cmd, args, { encoding: 'utf8', stdio: 'pipe' });
}

/**
 * A PostgreSQL server that a fault test owns, in a temporary directory (socket there too, TCP
 * on a free loopback port): it can be stopped abruptly, started again, frozen and thawed.
 */
/** A backend may exit between the listing and the signal: that one needs no signal. */
function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async create(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(path.join(tmpdir(), 'pgfault-'));
    if (asRoot) {
      const [uid, gid] = ['-u', '-g'].map((f) => Number(execFileSync('id', [f, 'postgres'], { encoding: 'utf8' })));
      chownSync(dir, uid, gid);
    }
    const pg = new PrivatePostgres(dir, await freePort());
    run('initdb', ['-D', pg.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--no-instructions']);
    return pg;
  }

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  /** Base URL for DATABASE_URL (each service appends its own database name). */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/platform`;
  }

  start(): void {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
    run('pg_ctl', ['-D', this.dataDir, '-l', path.join(this.dir, 'server.log'), '-o', opts, '-w', '-t', '30', 'start']);
  }

  /** Like a crash or a pulled plug: every connection is cut at once. */
  stopImmediately(): void {
    run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
  }

  /** The postmaster and its children (backends, checkpointer, ...). */
  private pids(): number[] {
    const postmaster = Number(readFileSync(path.join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    let children: number[] = [];
    try {
      const out = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' });
      children = out.split('\n').filter(Boolean).map(Number);
    } catch {
      /* pgrep exits 1 when there are none */
    }
    return [postmaster, ...children];
  }

  /** SIGSTOP: connections stay open and nothing answers, like a frozen host. */
  freeze(): void {
    // A backend forked between the listing and the postmaster's stop would keep serving: list again until
    // no new process appears (once the postmaster is stopped it forks no more).
    const stopped = new Set<number>();
    for (let fresh = this.pids(); fresh.length; fresh = this.pids().filter((pid) => !stopped.has(pid))) {
      for (const pid of fresh) {
        signal(pid, 'SIGSTOP');
        stopped.add(pid);
      }
    }
  }

  thaw(): void {
    for (const pid of this.pids()) signal(pid, 'SIGCONT');
  }

  /** Thaws, stops and deletes everything (safe to call in any state). */
  destroy(): void {
    try {
      this.thaw();
      this.stopImmediately();
    } catch {
      /* not running */
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
