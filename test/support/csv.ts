import { call, eventually, type Tenant } from './client.js';

export function csvForm(content: string | Buffer, filename = 'contacts.csv'): FormData {
  const form = new FormData();
  const bytes = typeof content === 'string' ? content : new Uint8Array(content);
  form.append('file', new Blob([bytes], { type: 'text/csv' }), filename);
  return form;
}

/** Uploads a CSV (202 expected) and polls its job until it is completed or failed. */
export async function importCsv(t: Tenant, content: string | Buffer) {
  const start = await call('POST', '/contacts/import', undefined, { key: t.secretKey, raw: csvForm(content) });
  expect(start.status).toBe(202);
  expect(start.body).toEqual({ jobId: expect.any(String), status: 'queued' });
  return eventually(
    async () => {
      const job = await call('GET', `/contacts/import/${start.body.jobId}`, undefined, { key: t.secretKey });
      return ['completed', 'failed'].includes(job.body.status) ? job.body : undefined;
    },
    30_000,
    'import completion',
  );
}
