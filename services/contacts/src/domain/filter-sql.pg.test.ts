import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { compileFilter, SqlParams } from './filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';

// Runs compiled filters against a real PostgreSQL (DESIGN.md: no mocked database) in a throwaway database.

const SERVER_URL = 'postgres://postgres@127.0.0.1:5432';
const DB_NAME = `contacts_filter_sql_${randomBytes(6).toString('hex')}`;

const SCHEMA = `
CREATE TABLE contacts (id uuid PRIMARY KEY, project_id uuid NOT NULL, email text NOT NULL, subscribed boolean NOT NULL,
  snoozed_until timestamptz, data jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL);
CREATE UNIQUE INDEX contacts_project_email ON contacts (project_id, lower(email));
CREATE INDEX contacts_data_gin ON contacts USING gin (data jsonb_path_ops);
CREATE TABLE events (id uuid PRIMARY KEY, project_id uuid NOT NULL, contact_id uuid NOT NULL, name text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL);
CREATE INDEX events_contact_name_time ON events (contact_id, name, created_at);
CREATE TABLE email_activity (id bigserial PRIMARY KEY, project_id uuid NOT NULL, contact_id uuid NOT NULL,
  email_id text NOT NULL, type text NOT NULL, created_at timestamptz NOT NULL);
CREATE INDEX email_activity_contact_type_time ON email_activity (contact_id, type, created_at);
CREATE TABLE segment_members (project_id uuid NOT NULL, segment_id uuid NOT NULL, contact_id uuid NOT NULL,
  PRIMARY KEY (segment_id, contact_id));
`;

const PROJECT = randomUUID();
const OTHER_PROJECT = randomUUID();
const DATES_PROJECT = randomUUID();
const SEGMENT = randomUUID();
const ids = { ada: randomUUID(), bob: randomUUID(), carol: randomUUID(), other: randomUUID() };
const name = new Map<string, string>(Object.entries(ids).map(([k, v]) => [v, k]));

const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
const HOUR = 3600_000;
const DAY = 24 * HOUR;

let admin: pg.Client;
let db: pg.Client;

async function contact(id: string, project: string, email: string, subscribed: boolean, data: unknown, ageMs: number) {
  await db.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, now() - make_interval(secs => $6), now() - make_interval(secs => $6))`,
    [id, project, email, subscribed, JSON.stringify(data), ageMs / 1000],
  );
}

async function event(project: string, contactId: string, eventName: string, ageMs: number) {
  await db.query(
    `INSERT INTO events (id, project_id, contact_id, name, created_at)
     VALUES ($1, $2, $3, $4, now() - make_interval(secs => $5))`,
    [randomUUID(), project, contactId, eventName, ageMs / 1000],
  );
}

async function activity(project: string, contactId: string, type: string, ageMs: number) {
  await db.query(
    `INSERT INTO email_activity (project_id, contact_id, email_id, type, created_at)
     VALUES ($1, $2, 'em_1', $3, now() - make_interval(secs => $4))`,
    [project, contactId, type, ageMs / 1000],
  );
}

beforeAll(async () => {
  admin = new pg.Client(`${SERVER_URL}/postgres`);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB_NAME}`);
  db = new pg.Client(`${SERVER_URL}/${DB_NAME}`);
  await db.connect();
  await db.query(SCHEMA);

  await contact(
    ids.ada,
    PROJECT,
    'Ada@Example.com',
    true,
    {
      plan: 'pro',
      seats: 10,
      profile: { tier: 'gold' },
      tags: ['vip', 'beta'],
      bio: '50% off_deal',
      lastSeen: iso(HOUR),
      signup: '2020-01-01',
      leapDay: '2000-02-29T00:00:00Z',
      gone: null,
    },
    2 * DAY,
  );
  await contact(
    ids.bob,
    PROJECT,
    'bob@test.io',
    false,
    {
      plan: 'free',
      seats: '12',
      profile: { tier: 'silver' },
      bio: '50 percent off deal',
      lastSeen: '2023-02-29T00:00:00Z',
      signup: '2022-06-01T00:00:00Z',
      leapDay: '1900-02-29T00:00:00Z',
    },
    40 * DAY,
  );
  await contact(
    ids.carol,
    PROJECT,
    'carol@example.com',
    true,
    {
      seats: 3,
      lastSeen: '2001-01-01T10:00:00+02:00',
      leapDay: '2024-02-29T12:00:00.123456Z',
    },
    HOUR,
  );
  await contact(ids.other, OTHER_PROJECT, 'ada@example.com', true, { plan: 'pro' }, HOUR);

  await event(PROJECT, ids.ada, 'signup', 3 * DAY);
  await event(PROJECT, ids.ada, 'purchase', HOUR);
  await event(PROJECT, ids.bob, 'signup', 60 * DAY);
  await event(OTHER_PROJECT, ids.ada, 'refund', HOUR); // wrong project: must not count for Ada
  await event(OTHER_PROJECT, ids.other, 'signup', HOUR);
  await activity(PROJECT, ids.ada, 'open', 5 * 60_000);
  await activity(PROJECT, ids.bob, 'open', 10 * DAY);
  await activity(PROJECT, ids.carol, 'click', 0);
  await db.query('INSERT INTO segment_members (project_id, segment_id, contact_id) VALUES ($1, $2, $3), ($1, $2, $4)', [
    PROJECT,
    SEGMENT,
    ids.ada,
    ids.carol,
  ]);
});

afterAll(async () => {
  await db?.end();
  await admin?.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  await admin?.end();
});

async function select(condition: unknown, project = PROJECT): Promise<string[]> {
  const params = new SqlParams([project]);
  const where = compileFilter(parseFilterTree(condition), params);
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM contacts c WHERE c.project_id = $1 AND ${where}`,
    params.values,
  );
  return rows.map((r) => name.get(r.id) ?? r.id).sort();
}

const one = (filter: Record<string, unknown>) => select({ logic: 'AND', groups: [{ filters: [filter] }] });

describe('compiled filters on PostgreSQL', () => {
  test('an empty tree selects every contact of the project, and only of the project', async () => {
    expect(await select({ groups: [] })).toEqual(['ada', 'bob', 'carol']);
  });

  test('email: equals is case-insensitive, contains is a case-insensitive substring', async () => {
    expect(await one({ field: 'email', operator: 'equals', value: 'ada@example.COM' })).toEqual(['ada']);
    expect(await one({ field: 'email', operator: 'contains', value: 'EXAMPLE' })).toEqual(['ada', 'carol']);
    expect(await one({ field: 'email', operator: 'notContains', value: 'example' })).toEqual(['bob']);
  });

  test('subscribed equals a boolean', async () => {
    expect(await one({ field: 'subscribed', operator: 'equals', value: false })).toEqual(['bob']);
  });

  test('createdAt: within, olderThan and date comparisons', async () => {
    expect(await one({ field: 'createdAt', operator: 'within', value: 3 })).toEqual(['ada', 'carol']);
    expect(await one({ field: 'createdAt', operator: 'olderThan', value: 30, unit: 'days' })).toEqual(['bob']);
    expect(await one({ field: 'createdAt', operator: 'within', value: 90, unit: 'minutes' })).toEqual(['carol']);
    expect(await one({ field: 'updatedAt', operator: 'greaterThan', value: iso(10 * DAY) })).toEqual(['ada', 'carol']);
  });

  test('data equals and notEquals, nested paths included', async () => {
    expect(await one({ field: 'data.plan', operator: 'equals', value: 'pro' })).toEqual(['ada']);
    expect(await one({ field: 'data.plan', operator: 'notEquals', value: 'pro' })).toEqual(['bob', 'carol']);
    expect(await one({ field: 'data.profile.tier', operator: 'equals', value: 'gold' })).toEqual(['ada']);
    expect(await one({ field: 'data.seats', operator: 'equals', value: 3 })).toEqual(['carol']);
  });

  test('numeric comparisons read only JSON numbers (a string value never matches nor throws)', async () => {
    expect(await one({ field: 'data.seats', operator: 'gt', value: 5 })).toEqual(['ada']);
    expect(await one({ field: 'data.seats', operator: 'lessThanOrEqual', value: 3 })).toEqual(['carol']);
    expect(await one({ field: 'data.plan', operator: 'greaterThan', value: 0 })).toEqual([]);
  });

  test('numeric comparisons select numbers only, whatever else the path holds', async () => {
    const project = randomUUID();
    const values: Record<string, unknown> = {
      five: 5,
      fivePointZero: 5.0,
      justAbove: 5.000001,
      huge: 1e30,
      negative: -1e30,
      numericText: '60',
      text: 'zzz',
      emptyText: '',
      array: [60],
      emptyArray: [],
      object: { a: 60 },
      emptyObject: {},
      yes: true,
      no: false,
      jsonNull: null,
    };
    const byId = new Map<string, string>();
    for (const [label, value] of Object.entries(values)) {
      const id = randomUUID();
      byId.set(id, label);
      await contact(id, project, `${id}@example.com`, true, { n: value }, 0);
    }
    await contact(randomUUID(), project, 'absent@example.com', true, {}, 0);
    const labels = async (operator: string, value: number) => {
      const params = new SqlParams([project]);
      const tree = parseFilterTree({ groups: [{ filters: [{ field: 'data.n', operator, value }] }] });
      const where = compileFilter(tree, params);
      const { rows } = await db.query(`SELECT id FROM contacts c WHERE c.project_id = $1 AND ${where}`, params.values);
      return rows.map((r) => byId.get(r.id)).sort();
    };
    expect(await labels('greaterThan', 5)).toEqual(['huge', 'justAbove']);
    expect(await labels('greaterThanOrEqual', 5)).toEqual(['five', 'fivePointZero', 'huge', 'justAbove']);
    expect(await labels('lessThan', 5.000001)).toEqual(['five', 'fivePointZero', 'negative']);
    expect(await labels('lessThanOrEqual', -1e30)).toEqual(['negative']);
    expect(await labels('greaterThan', -1e31)).toEqual(['five', 'fivePointZero', 'huge', 'justAbove', 'negative']);
  });

  test('contains matches substrings of strings (%, _ taken literally) and elements of arrays', async () => {
    expect(await one({ field: 'data.tags', operator: 'contains', value: 'vip' })).toEqual(['ada']);
    expect(await one({ field: 'data.bio', operator: 'contains', value: '50%' })).toEqual(['ada']);
    expect(await one({ field: 'data.bio', operator: 'contains', value: 'f_d' })).toEqual(['ada']);
    expect(await one({ field: 'data.bio', operator: 'contains', value: 'OFF' })).toEqual(['ada', 'bob']);
    expect(await one({ field: 'data.bio', operator: 'notContains', value: 'percent' })).toEqual(['ada', 'carol']);
  });

  test('exists means present and not JSON null', async () => {
    expect(await one({ field: 'data.plan', operator: 'exists' })).toEqual(['ada', 'bob']);
    expect(await one({ field: 'data.plan', operator: 'notExists' })).toEqual(['carol']);
    expect(await one({ field: 'data.gone', operator: 'exists' })).toEqual([]);
    expect(await one({ field: 'data.profile.tier', operator: 'exists' })).toEqual(['ada', 'bob']);
  });

  test('within and olderThan on data read full ISO 8601 date-times only; impossible dates never throw', async () => {
    expect(await one({ field: 'data.lastSeen', operator: 'within', value: 1 })).toEqual(['ada']);
    expect(await one({ field: 'data.lastSeen', operator: 'olderThan', value: 30 })).toEqual(['carol']);
    expect(await one({ field: 'data.leapDay', operator: 'olderThan', value: 1 })).toEqual(['ada', 'carol']);
    expect(await one({ field: 'data.signup', operator: 'olderThan', value: 1 })).toEqual(['bob']);
  });

  test('date comparisons on data read bare dates as midnight UTC', async () => {
    expect(await one({ field: 'data.signup', operator: 'lessThan', value: '2021-01-01' })).toEqual(['ada']);
    expect(await one({ field: 'data.signup', operator: 'gte', value: '2020-01-01T00:00:00Z' })).toEqual(['ada', 'bob']);
  });

  test('the date guard accepts exactly the texts PostgreSQL can cast', async () => {
    const texts = {
      valid: [
        '2024-02-29T00:00:00Z',
        '2000-02-29T23:59:59.123456789Z',
        '2024-06-30T10:00:00+14:00',
        '2024-06-30T10:00:00-05:30',
        '1999-12-31T23:59:59.5Z',
      ],
      invalid: [
        '2023-02-29T00:00:00Z',
        '1900-02-29T00:00:00Z',
        '2024-04-31T00:00:00Z',
        '2024-13-01T00:00:00Z',
        '0000-01-01T00:00:00Z',
        '2024-01-01T24:00:00Z',
        '2024-01-01T00:60:00Z',
        '2024-01-01T00:00:00+15:00',
        '2024-01-01T00:00:00',
        '2024-01-01',
        'yesterday',
        '12',
      ],
    };
    const expected: string[] = [];
    for (const [kind, list] of Object.entries(texts)) {
      for (const text of list) {
        const id = randomUUID();
        if (kind === 'valid') expected.push(id);
        await contact(id, DATES_PROJECT, `${id}@example.com`, true, { at: text }, 0);
      }
    }
    const params = new SqlParams([DATES_PROJECT]);
    const where = compileFilter(
      parseFilterTree({ groups: [{ filters: [{ field: 'data.at', operator: 'within', value: 36500 }] }] }),
      params,
    );
    const { rows } = await db.query(`SELECT id FROM contacts c WHERE c.project_id = $1 AND ${where}`, params.values);
    expect(rows.map((r) => r.id).sort()).toEqual(expected.sort());
  });

  test('within/olderThan near the cutoff whatever the offset; impossible dates and year 0000 never match', async () => {
    const project = randomUUID();
    const cutoff = Date.now() - 3 * DAY;
    // The instant `ms` written with a UTC offset of `minutes`: its date part can be a day off the UTC date.
    const inZone = (ms: number, minutes: number) => {
      const local = new Date(ms + minutes * 60_000).toISOString().slice(0, 19);
      const abs = Math.abs(minutes);
      const hh = String(Math.floor(abs / 60)).padStart(2, '0');
      return `${local}${minutes < 0 ? '-' : '+'}${hh}:${String(abs % 60).padStart(2, '0')}`;
    };
    const texts: Record<string, string> = {
      insideEast: inZone(cutoff + 10 * 60_000, 14 * 60 + 59),
      insideWest: inZone(cutoff + 10 * 60_000, -(14 * 60 + 59)),
      insideZ: new Date(cutoff + 10 * 60_000).toISOString(),
      insideFarFuture: '2999-12-31T23:59:59.999999999-14:00',
      outsideEast: inZone(cutoff - 10 * 60_000, 14 * 60),
      outsideWest: inZone(cutoff - 10 * 60_000, -14 * 60),
      outsideZ: new Date(cutoff - 10 * 60_000).toISOString(),
      outsideLeap400: '0400-02-29T00:00:00Z',
      outsideYear1: '0001-01-01T00:00:00+01:00',
      yearZero: '0000-06-01T00:00:00Z',
      feb30: '2026-02-30T00:00:00Z',
      feb29NotLeap: '2026-02-29T00:00:00Z',
      feb29Century: '2100-02-29T00:00:00Z',
      apr31Future: '2999-04-31T00:00:00Z',
      june31: '2020-06-31T00:00:00Z',
      offsetTooLarge: '2999-01-01T00:00:00+15:00',
      noZone: '2999-01-01T00:00:00',
      tenDigitFraction: '2999-01-01T00:00:00.1234567890Z',
    };
    const byId = new Map<string, string>();
    for (const [label, text] of Object.entries(texts)) {
      const id = randomUUID();
      byId.set(id, label);
      await contact(id, project, `${id}@example.com`, true, { at: text }, 0);
    }
    const labels = async (operator: string) => {
      const params = new SqlParams([project]);
      const tree = parseFilterTree({ groups: [{ filters: [{ field: 'data.at', operator, value: 3 }] }] });
      const where = compileFilter(tree, params);
      const { rows } = await db.query(`SELECT id FROM contacts c WHERE c.project_id = $1 AND ${where}`, params.values);
      return rows.map((r) => byId.get(r.id)).sort();
    };
    expect(await labels('within')).toEqual(['insideEast', 'insideFarFuture', 'insideWest', 'insideZ']);
    expect(await labels('olderThan')).toEqual([
      'outsideEast',
      'outsideLeap400',
      'outsideWest',
      'outsideYear1',
      'outsideZ',
    ]);
  });

  test('triggered operators check the contact’s events in its own project', async () => {
    expect(await one({ field: 'event.signup', operator: 'triggered' })).toEqual(['ada', 'bob']);
    expect(await one({ field: 'event.signup', operator: 'triggeredWithin', value: 7 })).toEqual(['ada']);
    expect(await one({ field: 'event.signup', operator: 'triggeredOlderThan', value: 30 })).toEqual(['bob']);
    expect(await one({ field: 'event.purchase', operator: 'notTriggered' })).toEqual(['bob', 'carol']);
    expect(await one({ field: 'event.signup', operator: 'notTriggeredWithin', value: 7 })).toEqual(['bob', 'carol']);
    expect(await one({ field: 'event.refund', operator: 'triggered' })).toEqual([]);
  });

  test('email.<activity> filters read email activity by type', async () => {
    expect(await one({ field: 'email.open', operator: 'triggered' })).toEqual(['ada', 'bob']);
    expect(await one({ field: 'email.open', operator: 'triggeredWithin', value: 1, unit: 'hours' })).toEqual(['ada']);
    expect(await one({ field: 'email.click', operator: 'notTriggered' })).toEqual(['ada', 'bob']);
  });

  test('memberOfSegment and notMemberOfSegment read segment_members', async () => {
    expect(await one({ field: `segment.${SEGMENT}`, operator: 'memberOfSegment' })).toEqual(['ada', 'carol']);
    expect(await one({ field: 'segment', operator: 'notMemberOfSegment', value: SEGMENT })).toEqual(['bob']);
  });

  test('groups combine by OR; a group ANDs its filters with its nested conditions', async () => {
    expect(
      await select({
        logic: 'OR',
        groups: [
          { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] },
          { filters: [{ field: 'subscribed', operator: 'equals', value: false }] },
        ],
      }),
    ).toEqual(['ada', 'bob']);
    expect(
      await select({
        groups: [
          {
            filters: [{ field: 'subscribed', operator: 'equals', value: true }],
            conditions: {
              logic: 'OR',
              groups: [
                { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] },
                { filters: [{ field: 'data.seats', operator: 'lte', value: 3 }] },
              ],
            },
          },
        ],
      }),
    ).toEqual(['ada', 'carol']);
  });
});
