import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { migrations } from '../store/migrations.js';
import { UploadsStore } from '../store/uploads-store.js';
import { Uploads } from './uploads.js';

// Without S3_* upload bytes live in messaging's database (the e2e platform stores them in an s3rver bucket).

let db: TestDatabase;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

beforeAll(async () => {
  db = await createTestDatabase('uploads_storage', migrations);
});
afterAll(async () => {
  await db?.drop();
});

test('without a bucket the bytes are stored in the database and read back', async () => {
  const uploads = new Uploads(new UploadsStore(db.pool));
  const row = await uploads.create(randomUUID(), PNG);
  expect(row).toMatchObject({ storage: 'database', size: PNG.length, content_type: 'image/png' });
  expect((await uploads.get(row.id)).bytes.equals(PNG)).toBe(true);
});
