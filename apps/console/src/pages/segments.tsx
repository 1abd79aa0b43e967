import { useEffect, useState } from 'preact/hooks';
import { api, get, post, query } from '../api';
import {
  DataTable,
  ErrorBox,
  Field,
  Link,
  Loading,
  NewLink,
  Page,
  Pager,
  TextArea,
  navigate,
  useAction,
  useLoad,
  when,
} from '../ui';
import { FilterBuilder, cleanTree, emptyTree, type Tree } from './filter-builder';

interface Segment {
  id: string;
  name: string;
  description: string | null;
  type: 'DYNAMIC' | 'STATIC';
  condition: Tree | null;
  trackMembership: boolean;
  memberCount: number;
  slug: string;
  updatedAt: string;
}

export function SegmentsPage() {
  const list = useLoad(() => get<Segment[]>('/segments'), []);
  return (
    <Page title="Segments" actions={<NewLink href="/app/segments/new" label="New segment" />}>
      <ErrorBox error={list.error} />
      <Loading what={list.data} />
      {list.data && (
        <DataTable
          rows={list.data}
          rowKey={(s) => s.id}
          empty="No segments yet."
          columns={[
            { label: 'Name', cell: (s) => <Link href={`/app/segments/${s.id}`}>{s.name}</Link> },
            { label: 'Type', cell: (s) => s.type },
            { label: 'Members', cell: (s) => s.memberCount },
            { label: 'Tracked', cell: (s) => (s.trackMembership ? 'yes' : 'no') },
            { label: 'Updated', cell: (s) => when(s.updatedAt) },
          ]}
        />
      )}
    </Page>
  );
}

export function SegmentPage({ id }: { id: string }) {
  const isNew = id === 'new';
  const [s, setS] = useState<Partial<Segment> | null>(
    isNew ? { name: '', description: '', type: 'DYNAMIC', trackMembership: false } : null,
  );
  const [tree, setTree] = useState<Tree>(emptyTree());
  const save = useAction();
  const other = useAction();
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (isNew) return;
    get<Segment>(`/segments/${id}`).then((x) => {
      setS(x);
      if (x.condition) setTree(x.condition);
    }, save.setError);
  }, [id]);
  if (!s) return <ErrorBox error={save.error} />;
  const dynamic = s.type !== 'STATIC';
  return (
    <Page title={isNew ? 'New segment' : (s.name ?? '')}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setSaved(false);
          const body = {
            name: s.name,
            description: s.description || undefined,
            trackMembership: s.trackMembership,
            ...(dynamic ? { condition: cleanTree(tree) } : {}),
            ...(isNew ? { type: s.type } : {}),
          };
          const out = await save.run(() =>
            isNew ? post<Segment>('/segments', body) : api<Segment>('PATCH', `/segments/${id}`, body),
          );
          if (out) {
            setS(out);
            setSaved(true);
            if (isNew) navigate(`/app/segments/${out.id}`);
          }
        }}
      >
        <Field
          label="Name"
          name="name"
          value={s.name}
          error={save.error}
          onInput={(e) => setS({ ...s, name: e.currentTarget.value })}
        />
        <Field
          label="Description"
          name="description"
          value={s.description ?? ''}
          error={save.error}
          onInput={(e) => setS({ ...s, description: e.currentTarget.value })}
        />
        {isNew && (
          <div class="field">
            <label for="segment-type">Type</label>
            <select
              id="segment-type"
              value={s.type}
              onChange={(e) => setS({ ...s, type: e.currentTarget.value as Segment['type'] })}
            >
              <option value="DYNAMIC">Dynamic (by condition)</option>
              <option value="STATIC">Static (contacts you add)</option>
            </select>
          </div>
        )}
        <label class="check">
          <input
            type="checkbox"
            checked={s.trackMembership}
            onChange={(e) => setS({ ...s, trackMembership: e.currentTarget.checked })}
          />{' '}
          Track entry and exit (records <code>segment.{s.slug ?? '<slug>'}.entry</code> and <code>.exit</code> events)
        </label>
        {dynamic && <FilterBuilder tree={tree} onChange={setTree} />}
        <ErrorBox error={save.error} />
        {saved && <p role="status">Saved.</p>}
        <button type="submit" disabled={save.busy}>
          {isNew ? 'Create segment' : 'Save'}
        </button>
      </form>
      {!isNew && (
        <>
          <p>
            Cached member count: <strong data-testid="member-count">{s.memberCount}</strong>{' '}
            <button
              type="button"
              class="small"
              onClick={async () => {
                const out = await other.run(() =>
                  post<Segment>(`/segments/${id}/${s.trackMembership ? 'compute' : 'refresh'}`),
                );
                if (out) setS({ ...s, memberCount: out.memberCount });
              }}
            >
              {s.trackMembership ? 'Compute membership' : 'Recount'}
            </button>{' '}
            <button
              type="button"
              class="danger"
              onClick={async () => {
                if (await other.run(() => api('DELETE', `/segments/${id}`).then(() => true))) navigate('/app/segments');
              }}
            >
              Delete
            </button>
          </p>
          <ErrorBox error={other.error} />
          {!dynamic && <StaticMembers id={id} />}
          <Members id={id} />
        </>
      )}
    </Page>
  );
}

function StaticMembers({ id }: { id: string }) {
  const [emails, setEmails] = useState('');
  const [result, setResult] = useState<string | null>(null);
  const action = useAction();
  const list = () =>
    emails
      .split(/[\s,;]+/)
      .map((x) => x.trim())
      .filter(Boolean);
  return (
    <form onSubmit={(e) => e.preventDefault()}>
      <TextArea
        label="Emails to add or remove (one per line)"
        name="emails"
        rows={3}
        value={emails}
        onInput={(e) => setEmails(e.currentTarget.value)}
      />
      <button
        type="button"
        onClick={async () => {
          const out = await action.run(() => post(`/segments/${id}/members`, { emails: list(), createMissing: true }));
          if (out) setResult(`Added ${out.added}, created ${out.created}`);
        }}
      >
        Add members
      </button>{' '}
      <button
        type="button"
        onClick={async () => {
          const out = await action.run(() => api('DELETE', `/segments/${id}/members`, { emails: list() }));
          if (out) setResult(`Removed ${out.removed}`);
        }}
      >
        Remove members
      </button>
      {result && <p role="status">{result}</p>}
      <ErrorBox error={action.error} />
    </form>
  );
}

function Members({ id }: { id: string }) {
  const [page, setPage] = useState(1);
  const list = useLoad(() => get(`/segments/${id}/contacts${query({ page, pageSize: 20 })}`), [id, page]);
  return (
    <>
      <h2>Members</h2>
      <ErrorBox error={list.error} />
      {list.data && (
        <>
          <p class="muted">{list.data.total} contacts</p>
          <ul>
            {list.data.data.map((c: { id: string; email: string }) => (
              <li key={c.id}>
                <Link href={`/app/contacts/${c.id}`}>{c.email}</Link>
              </li>
            ))}
          </ul>
          <Pager page={page} totalPages={list.data.totalPages} onPage={setPage} />
        </>
      )}
    </>
  );
}
