import net from 'node:net';
import { createPool, queryWithEnds, type Pool, type PoolClient } from './db.js';
import { GroupCommit } from './group-commit.js';
import { contextFrom, currentContext, runInContext } from './request-context.js';

const DATABASE = 'postgres://postgres@127.0.0.1:5432/postgres';

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

describe('GroupCommit when the database cannot be reached', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(() => process.on('unhandledRejection', onUnhandled));
  afterAll(() => process.off('unhandledRejection', onUnhandled));

  it('rejects every waiting caller when begin() fails, and serves again once it works', async () => {
    const down = createPool(`postgres://postgres@127.0.0.1:${await closedPort()}/postgres`, 2);
    const up = createPool(DATABASE, 2);
    let pool = down;
    const commits = new GroupCommit<number, number>(
      () => pool.connect(),
      async (tx: PoolClient, n) => (await tx.query<{ n: number }>('SELECT $1::int + 1 AS n', [n])).rows[0].n,
    );
    try {
      // One alone and a batch that queued behind it: both paths call begin().
      const outcomes = await Promise.allSettled([1, 2, 3, 4].map((n) => commits.submit(n)));
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      expect((outcomes[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'ECONNREFUSED' });

      pool = up;
      await expect(Promise.all([5, 6].map((n) => commits.submit(n)))).resolves.toEqual([6, 7]);
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      await down.end();
      await up.end();
    }
  });
});

describe('GroupCommit and the request context', () => {
  it('runs each write in its submitter context, and a mixed writeMany batch outside any', async () => {
    const pool = createPool(DATABASE, 2);
    const seen: Array<string | undefined> = [];
    const batches: Array<{ shared?: string; each: Array<string | undefined> }> = [];
    const write = async (tx: PoolClient, n: number) => {
      seen.push(currentContext()?.requestId);
      return (await tx.query<{ n: number }>('SELECT $1::int AS n', [n])).rows[0].n;
    };
    const writeMany = async (_tx: PoolClient, inputs: number[], contexts: Array<{ requestId: string } | undefined>) => {
      batches.push({ shared: currentContext()?.requestId, each: contexts.map((c) => c?.requestId) });
      return inputs;
    };
    const submitAs = (c: GroupCommit<number, number>, id: string, n: number) =>
      runInContext(contextFrom({ requestId: `req-${id}-group-commit` }), () => c.submit(n));
    try {
      const one = new GroupCommit<number, number>(() => pool.connect(), write);
      await Promise.all([submitAs(one, 'a', 1), submitAs(one, 'b', 2), submitAs(one, 'c', 3)]);
      expect(seen).toEqual(['req-a-group-commit', 'req-b-group-commit', 'req-c-group-commit']);

      const many = new GroupCommit<number, number>(() => pool.connect(), write, { writeMany });
      await Promise.all([submitAs(many, 'a', 1), submitAs(many, 'b', 2), submitAs(many, 'c', 3)]);
      // Submitted in one tick, all three share the first transaction (none goes alone ahead of the others).
      expect(batches).toEqual([
        { shared: undefined, each: ['req-a-group-commit', 'req-b-group-commit', 'req-c-group-commit'] },
      ]);
    } finally {
      await pool.end();
    }
  });
});

/** A begin() whose clients record the first word of each text they send. */
function recordingBegin(pool: Pool, sent: string[]): () => Promise<PoolClient> {
  const wrapped = new WeakSet<PoolClient>();
  return async () => {
    const client = await pool.connect();
    if (wrapped.has(client)) return client;
    wrapped.add(client);
    const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>;
    (client as unknown as { query: typeof query }).query = (text, values) => {
      sent.push(text.split(' ')[0]);
      return query(text, values);
    };
    return client;
  };
}

describe('GroupCommit with oneStatement', () => {
  it('runs a batch of one statement without BEGIN and COMMIT, and the others in a transaction', async () => {
    const pool = createPool(DATABASE, 2);
    const sent: string[] = [];
    const begin = recordingBegin(pool, sent);
    const write = async (tx: PoolClient, n: number) =>
      (await tx.query<{ n: number }>('SELECT $1::int AS n', [n])).rows[0].n;
    const writeMany = async (tx: PoolClient, inputs: number[]) =>
      (await tx.query<{ n: number }>('SELECT unnest($1::int[]) AS n', [inputs])).rows.map((r) => r.n);
    // Even numbers are one statement; a batch is when all of its inputs are.
    const commits = new GroupCommit<number, number>(begin, write, {
      writeMany,
      oneStatement: (inputs) => inputs.every((n) => n % 2 === 0),
    });
    try {
      await expect(Promise.all([2, 4].map((n) => commits.submit(n)))).resolves.toEqual([2, 4]);
      await expect(commits.submit(6)).resolves.toBe(6);
      expect(sent).toEqual(['SELECT', 'SELECT']);
      sent.length = 0;
      await expect(Promise.all([2, 3].map((n) => commits.submit(n)))).resolves.toEqual([2, 3]);
      await expect(commits.submit(5)).resolves.toBe(5);
      expect(sent).toEqual(['BEGIN', 'SELECT', 'COMMIT', 'BEGIN', 'SELECT', 'COMMIT']);
    } finally {
      await pool.end();
    }
  });
});

describe('GroupCommit with writeManyEnds', () => {
  it('sends no BEGIN or COMMIT around a batch, whose writeMany sends them; a write alone gets both', async () => {
    const pool = createPool(DATABASE, 2);
    const sent: string[] = [];
    const write = async (tx: PoolClient, n: number) =>
      (await tx.query<{ n: number }>('SELECT $1::int AS n', [n])).rows[0].n;
    const writeMany = async (tx: PoolClient, inputs: number[]) => {
      await queryWithEnds(tx, 'SELECT 1', [], { begin: true });
      const rows = await queryWithEnds<{ n: number }>(tx, 'SELECT unnest($1::int[]) AS n', [`{${inputs}}`], {
        commit: true,
      });
      return rows.map((r) => r.n);
    };
    const commits = new GroupCommit<number, number>(recordingBegin(pool, sent), write, {
      writeMany,
      writeManyEnds: true,
    });
    try {
      await expect(Promise.all([1, 2].map((n) => commits.submit(n)))).resolves.toEqual([1, 2]);
      await expect(commits.submit(3)).resolves.toBe(3);
      expect(sent).toEqual(['BEGIN;', 'SELECT', 'BEGIN', 'SELECT', 'COMMIT']);
    } finally {
      await pool.end();
    }
  });
});
