import { useEffect, useState } from 'preact/hooks';
import { api, get, post, query } from '../api';
import { ErrorBox, Link, Loading, Page, TextArea, navigate, useAction, useLoad, when } from '../ui';

interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

interface ContactPage {
  data: Contact[];
  cursor: string;
  hasMore: boolean;
  total: number;
}

/** Polls a background job until it leaves `queued`/`processing`. */
async function pollJob(path: string, onUpdate: (job: any) => void): Promise<any> {
  for (;;) {
    const job = await get(path);
    onUpdate(job);
    if (job.status !== 'queued' && job.status !== 'processing' && job.status !== 'running') return job;
    await new Promise((r) => setTimeout(r, 500));
  }
}

export function ContactsPage() {
  const [search, setSearch] = useState('');
  const [subscribed, setSubscribed] = useState('');
  const [cursors, setCursors] = useState<string[]>(['']);
  const cursor = cursors[cursors.length - 1];
  const list = useLoad(
    () => get<ContactPage>(`/contacts${query({ limit: 25, search, subscribed, cursor })}`),
    [search, subscribed, cursor],
  );
  const [total, setTotal] = useState(0);
  useEffect(() => {
    if (list.data && cursor === '') setTotal(list.data.total);
  }, [list.data]);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const bulk = useAction();
  const [bulkJob, setBulkJob] = useState<any>(null);

  const runBulk = async (op: 'subscribe' | 'unsubscribe' | 'delete') => {
    const started = await bulk.run(() => post(`/contacts/bulk-${op}`, { contactIds: [...selected] }));
    if (!started) return;
    await bulk.run(() => pollJob(`/contacts/bulk/${started.jobId}`, setBulkJob));
    setSelected(new Set());
    list.reload();
  };

  return (
    <Page
      title="Contacts"
      actions={
        <Link href="/app/contacts/import" class="button">
          Import CSV
        </Link>
      }
    >
      <form class="inline" role="search" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="contact-search">Search by email</label>
          <input
            id="contact-search"
            type="search"
            value={search}
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              setCursors(['']);
            }}
          />
        </div>
        <div class="field">
          <label for="contact-subscribed">Subscription</label>
          <select
            id="contact-subscribed"
            value={subscribed}
            onChange={(e) => {
              setSubscribed(e.currentTarget.value);
              setCursors(['']);
            }}
          >
            <option value="">All</option>
            <option value="true">Subscribed</option>
            <option value="false">Unsubscribed</option>
          </select>
        </div>
      </form>
      <NewContact onCreated={list.reload} />
      {selected.size > 0 && (
        <div class="bulk" role="toolbar" aria-label="Bulk actions">
          {selected.size} selected:{' '}
          <button type="button" disabled={bulk.busy} onClick={() => runBulk('subscribe')}>
            Subscribe
          </button>{' '}
          <button type="button" disabled={bulk.busy} onClick={() => runBulk('unsubscribe')}>
            Unsubscribe
          </button>{' '}
          <button type="button" class="danger" disabled={bulk.busy} onClick={() => runBulk('delete')}>
            Delete
          </button>
        </div>
      )}
      {bulkJob && (
        <p role="status">
          Bulk {bulkJob.operation}: {bulkJob.status}, {bulkJob.succeeded ?? 0} of {bulkJob.total}
        </p>
      )}
      <ErrorBox error={list.error ?? bulk.error} />
      <Loading what={list.data} />
      {list.data && (
        <>
          <p class="muted">{total} contacts</p>
          <table>
            <thead>
              <tr>
                <th>
                  <span class="sr-only">Select</span>
                </th>
                <th>Email</th>
                <th>Subscribed</th>
                <th>Data</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((c) => (
                <tr key={c.id}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select ${c.email}`}
                      checked={selected.has(c.id)}
                      onChange={(e) => {
                        const next = new Set(selected);
                        if (e.currentTarget.checked) next.add(c.id);
                        else next.delete(c.id);
                        setSelected(next);
                      }}
                    />
                  </td>
                  <td>
                    <Link href={`/app/contacts/${c.id}`}>{c.email}</Link>
                  </td>
                  <td>{c.subscribed ? 'yes' : 'no'}</td>
                  <td class="wrap muted">{JSON.stringify(c.data).slice(0, 80)}</td>
                  <td>{when(c.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
              Previous
            </button>
            <button
              type="button"
              disabled={!list.data.hasMore}
              onClick={() => setCursors([...cursors, list.data!.cursor])}
            >
              Next
            </button>
          </nav>
        </>
      )}
    </Page>
  );
}

function NewContact({ onCreated }: { onCreated: () => void }) {
  const [email, setEmail] = useState('');
  const action = useAction();
  return (
    <form
      class="inline"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await action.run(() => post('/contacts', { email }))) {
          setEmail('');
          onCreated();
        }
      }}
    >
      <div class="field">
        <label for="new-contact">Add a contact</label>
        <input id="new-contact" type="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </div>
      <button type="submit" disabled={action.busy}>
        Add
      </button>
      <ErrorBox error={action.error} />
    </form>
  );
}

export function ContactPage({ id }: { id: string }) {
  const contact = useLoad(() => get<Contact>(`/contacts/${id}`), [id]);
  const timeline = useLoad(() => get(`/activity${query({ contactId: id, limit: 50 })}`), [id]);
  const [draft, setDraft] = useState<string | null>(null);
  const save = useAction();
  const remove = useAction();
  const c = contact.data;
  return (
    <Page title={c?.email ?? 'Contact'}>
      <ErrorBox error={contact.error} />
      <Loading what={c} />
      {c && (
        <>
          <dl class="figures">
            <div>
              <dt>Subscribed</dt>
              <dd>{c.subscribed ? 'yes' : 'no'}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{when(c.createdAt)}</dd>
            </div>
          </dl>
          <button
            type="button"
            onClick={async () => {
              const next = await save.run(() =>
                api<Contact>('PATCH', `/contacts/${id}`, { subscribed: !c.subscribed }),
              );
              if (next) contact.setData(next);
            }}
          >
            {c.subscribed ? 'Unsubscribe' : 'Subscribe'}
          </button>{' '}
          <button
            type="button"
            class="danger"
            onClick={async () => {
              if (await remove.run(() => api('DELETE', `/contacts/${id}`).then(() => true))) navigate('/app/contacts');
            }}
          >
            Delete contact
          </button>
          <h2>Data</h2>
          <p class="muted">
            A JSON object: keys you send are set, <code>null</code> removes a key, other keys stay.
          </p>
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              let data: unknown;
              try {
                data = JSON.parse(draft ?? JSON.stringify(c.data));
              } catch (err) {
                save.setError(new Error(`Not valid JSON: ${(err as Error).message}`));
                return;
              }
              const next = await save.run(() => api<Contact>('PATCH', `/contacts/${id}`, { data }));
              if (next) {
                contact.setData(next);
                setDraft(null);
              }
            }}
          >
            <TextArea
              label="Custom data"
              name="data"
              rows={8}
              error={save.error}
              value={draft ?? JSON.stringify(c.data, null, 2)}
              onInput={(e) => setDraft(e.currentTarget.value)}
            />
            <button type="submit" disabled={save.busy}>
              Save data
            </button>
          </form>
          <ErrorBox error={save.error ?? remove.error} />
          <h2>Timeline</h2>
          <ErrorBox error={timeline.error} />
          <ol class="timeline">
            {timeline.data?.data.map((a: any) => (
              <li key={a.id}>
                <time>{when(a.occurredAt)}</time> <strong>{a.type === 'event' ? a.name : a.type}</strong>{' '}
                <span class="muted">{a.data?.subject ?? ''}</span>
              </li>
            ))}
          </ol>
        </>
      )}
    </Page>
  );
}

export function ImportPage() {
  const [file, setFile] = useState<File | null>(null);
  const [job, setJob] = useState<any>(null);
  const action = useAction();
  return (
    <Page title="Import contacts">
      <p class="muted">
        A UTF-8 CSV file with a header row and an <code>email</code> column, at most 5 MB. Other columns become custom
        data; existing contacts are updated in place.
      </p>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (!file) return;
          const form = new FormData();
          form.append('file', file);
          const started = await action.run(() => post('/contacts/import', form));
          if (started) await action.run(() => pollJob(`/contacts/import/${started.jobId}`, setJob));
        }}
      >
        <div class="field">
          <label for="csv-file">CSV file</label>
          <input
            id="csv-file"
            type="file"
            accept=".csv,text/csv"
            onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
          />
        </div>
        <button type="submit" disabled={!file || action.busy}>
          Import
        </button>
      </form>
      <ErrorBox error={action.error} />
      {job && (
        <section aria-label="Import progress">
          <p role="status">
            Status: <strong data-testid="import-status">{job.status}</strong>
            {job.totalRows !== undefined && ` - ${job.processed ?? 0} of ${job.totalRows} rows`}
          </p>
          <dl class="figures">
            {['imported', 'updated', 'skipped'].map((k) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd data-testid={`import-${k}`}>{job[k] ?? 0}</dd>
              </div>
            ))}
          </dl>
          {job.failure && <p class="error">{job.failure}</p>}
          {job.errors?.length > 0 && (
            <table>
              <caption>Rows not imported</caption>
              <thead>
                <tr>
                  <th>Row</th>
                  <th>Email</th>
                  <th>Reason</th>
                </tr>
              </thead>
              <tbody>
                {job.errors.map((r: { row: number; email: string; reason: string }) => (
                  <tr key={r.row}>
                    <td>{r.row}</td>
                    <td>{r.email}</td>
                    <td>{r.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Link href="/app/contacts">See the contacts</Link>
        </section>
      )}
    </Page>
  );
}
