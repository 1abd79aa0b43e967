import { randomBytes } from 'node:crypto';
import type { Pool } from '@svc/lib/db';

/** The value stored under `key`, created with `create()` by whichever replica asks first. */
export async function settingOnce(
  pool: Pool,
  key: string,
  create: () => string = () => randomBytes(32).toString('base64url'),
): Promise<string> {
  await pool.query('INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, create()]);
  const { rows } = await pool.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]);
  return rows[0].value;
}
