import { useEffect, useState } from 'preact/hooks';
import { api, get, post, query } from '../api';
import { ErrorBox, Field, Link, NewLink, Page, PagedTable, TextArea, navigate, useAction, useLoad, when } from '../ui';
import { Chart } from './activity';
import { FilterBuilder, cleanTree, emptyTree, type Tree } from './filter-builder';

interface Campaign {
  id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  type: string;
  status: string;
  audienceType: 'ALL' | 'SEGMENT' | 'FILTERED';
  segmentId: string | null;
  audienceCondition: Tree | null;
  scheduledFor: string | null;
  totalRecipients: number;
  sentAt: string | null;
  updatedAt: string;
}

const STATUSES = ['', 'DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'];

export function CampaignsPage() {
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const list = useLoad(() => get(`/campaigns${query({ status, page, pageSize: 20 })}`), [status, page]);
  return (
    <Page title="Campaigns" actions={<NewLink href="/app/campaigns/new" label="New campaign" />}>
      <div class="field">
        <label for="campaign-status">Status</label>
        <select id="campaign-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s || 'All'}
            </option>
          ))}
        </select>
      </div>
      <PagedTable<Campaign>
        list={list}
        page={page}
        onPage={setPage}
        empty="No campaigns yet."
        columns={[
          { label: 'Name', cell: (c) => <Link href={`/app/campaigns/${c.id}`}>{c.name}</Link> },
          { label: 'Status', cell: (c) => <span class={`badge ${c.status.toLowerCase()}`}>{c.status}</span> },
          { label: 'Recipients', cell: (c) => c.totalRecipients },
          { label: 'Scheduled / sent', cell: (c) => when(c.sentAt ?? c.scheduledFor) },
        ]}
      />
    </Page>
  );
}

const BLANK: Partial<Campaign> = {
  name: '',
  subject: '',
  body: '<p>Hello {{firstName ?? "there"}},</p>\n',
  from: '',
  fromName: '',
  type: 'MARKETING',
  audienceType: 'ALL',
};

export function CampaignPage({ id }: { id: string }) {
  const isNew = id === 'new';
  const [c, setC] = useState<Partial<Campaign> | null>(isNew ? BLANK : null);
  const [tree, setTree] = useState<Tree>(emptyTree());
  const save = useAction();
  const [saved, setSaved] = useState(false);
  const segments = useLoad(() => get('/segments'), []);
  const load = () =>
    get<Campaign>(`/campaigns/${id}`).then((x) => {
      setC(x);
      if (x.audienceCondition) setTree(x.audienceCondition);
    }, save.setError);
  useEffect(() => {
    if (!isNew) load();
  }, [id]);
  if (!c) return <ErrorBox error={save.error} />;
  const editable = isNew || c.status === 'DRAFT';
  const set = (k: keyof Campaign) => (e: { currentTarget: { value: string } }) =>
    setC({ ...c, [k]: e.currentTarget.value });
  return (
    <Page title={isNew ? 'New campaign' : (c.name ?? '')}>
      {!isNew && (
        <p>
          Status:{' '}
          <span class={`badge ${c.status?.toLowerCase()}`} data-testid="campaign-status">
            {c.status}
          </span>
          {c.scheduledFor && <> for {when(c.scheduledFor)}</>}
        </p>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setSaved(false);
          const body = {
            name: c.name,
            subject: c.subject,
            body: c.body,
            from: c.from,
            fromName: c.fromName || undefined,
            type: c.type,
            audienceType: c.audienceType,
            ...(c.audienceType === 'SEGMENT' ? { segmentId: c.segmentId } : {}),
            ...(c.audienceType === 'FILTERED' ? { audienceCondition: cleanTree(tree) } : {}),
          };
          const out = await save.run(() =>
            isNew ? post('/campaigns', body).then((r) => r.data) : api('PUT', `/campaigns/${id}`, body),
          );
          if (out) {
            setSaved(true);
            if (isNew) navigate(`/app/campaigns/${out.id}`);
            else setC(out.data ?? out);
          }
        }}
      >
        <fieldset disabled={!editable}>
          <Field label="Name" name="name" value={c.name} error={save.error} onInput={set('name')} />
          <Field label="Subject" name="subject" value={c.subject} error={save.error} onInput={set('subject')} />
          <Field label="From (email)" name="from" value={c.from} error={save.error} onInput={set('from')} />
          <Field
            label="From name"
            name="fromName"
            value={c.fromName ?? ''}
            error={save.error}
            onInput={set('fromName')}
          />
          <div class="field">
            <label for="campaign-type">Type</label>
            <select id="campaign-type" value={c.type} onChange={set('type')}>
              <option>MARKETING</option>
              <option>TRANSACTIONAL</option>
              <option>HEADLESS</option>
            </select>
          </div>
          <TextArea
            label="Body (HTML with Liquid)"
            name="body"
            rows={8}
            value={c.body}
            error={save.error}
            onInput={set('body')}
          />
          <div class="field">
            <label for="campaign-audience">Audience</label>
            <select id="campaign-audience" value={c.audienceType} onChange={set('audienceType')}>
              <option value="ALL">All contacts</option>
              <option value="SEGMENT">A segment</option>
              <option value="FILTERED">Contacts matching a filter</option>
            </select>
          </div>
          {c.audienceType === 'SEGMENT' && (
            <div class="field">
              <label for="campaign-segment">Segment</label>
              <select id="campaign-segment" value={c.segmentId ?? ''} onChange={set('segmentId')}>
                <option value="">Choose...</option>
                {segments.data?.map((s: { id: string; name: string; memberCount: number }) => (
                  <option key={s.id} value={s.id}>
                    {s.name} ({s.memberCount} contacts)
                  </option>
                ))}
              </select>
            </div>
          )}
          {c.audienceType === 'FILTERED' && <FilterBuilder tree={tree} onChange={setTree} />}
          {c.audienceType === 'ALL' && <AllCount />}
        </fieldset>
        <ErrorBox error={save.error} />
        {saved && <p role="status">Saved.</p>}
        {editable && (
          <button type="submit" disabled={save.busy}>
            {isNew ? 'Create campaign' : 'Save'}
          </button>
        )}
      </form>
      {!isNew && <CampaignActions campaign={c as Campaign} reload={load} />}
      {!isNew && c.status !== 'DRAFT' && <Stats id={id} live={c.status === 'SENDING'} />}
    </Page>
  );
}

function AllCount() {
  const all = useLoad(() => get('/contacts?limit=1'), []);
  return (
    <p role="status">
      Recipients: every subscribed contact (<strong data-testid="audience-count">{all.data?.total ?? '...'}</strong>{' '}
      contacts in the project; MARKETING mail skips the unsubscribed)
    </p>
  );
}

function CampaignActions({ campaign: c, reload }: { campaign: Campaign; reload: () => Promise<unknown> }) {
  const action = useAction();
  const [at, setAt] = useState('');
  const [testTo, setTestTo] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const act = async (fn: () => Promise<any>, done: string) => {
    const out = await action.run(fn);
    if (out !== undefined) {
      setMessage(done);
      await reload();
    }
    return out;
  };
  return (
    <section aria-label="Campaign actions">
      <h2>Send</h2>
      {c.status === 'DRAFT' && (
        <>
          <button
            type="button"
            disabled={action.busy}
            onClick={() => act(() => post(`/campaigns/${c.id}/send`), 'Sending started.')}
          >
            Send now
          </button>
          <form
            class="inline"
            onSubmit={(e) => {
              e.preventDefault();
              act(() => post(`/campaigns/${c.id}/send`, { scheduledFor: new Date(at).toISOString() }), 'Scheduled.');
            }}
          >
            <div class="field">
              <label for="schedule-at">Schedule for</label>
              <input id="schedule-at" type="datetime-local" value={at} onInput={(e) => setAt(e.currentTarget.value)} />
            </div>
            <button type="submit" disabled={!at || action.busy}>
              Schedule
            </button>
          </form>
        </>
      )}
      {(c.status === 'SCHEDULED' || c.status === 'SENDING') && (
        <button type="button" class="danger" onClick={() => act(() => post(`/campaigns/${c.id}/cancel`), 'Cancelled.')}>
          Cancel
        </button>
      )}{' '}
      <button
        type="button"
        onClick={async () => {
          const copy = await action.run(() => post(`/campaigns/${c.id}/duplicate`));
          if (copy) navigate(`/app/campaigns/${copy.id}`);
        }}
      >
        Duplicate
      </button>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          act(() => post(`/campaigns/${c.id}/test`, { email: testTo }), `Test sent to ${testTo}.`);
        }}
      >
        <Field
          label="Send a test to"
          name="email"
          type="email"
          value={testTo}
          onInput={(e) => setTestTo(e.currentTarget.value)}
        />
        <button type="submit" disabled={action.busy}>
          Send test
        </button>
      </form>
      {message && <p role="status">{message}</p>}
      <ErrorBox error={action.error} />
    </section>
  );
}

const COUNTERS = ['totalRecipients', 'sent', 'delivered', 'opened', 'clicked', 'bounced', 'failed'];

/** Counters, refreshed every 2 s while sending, and the campaign's emails per hour (or day) since it started. */
function Stats({ id, live }: { id: string; live: boolean }) {
  const stats = useLoad(() => get(`/campaigns/${id}/stats`), [id]);
  const started = stats.data?.sentAt ?? stats.data?.createdAt;
  const days = started ? (Date.now() - new Date(started).getTime()) / 86_400_000 : 0;
  const series = useLoad(
    () =>
      started
        ? get(`/analytics/timeseries${query({ campaignId: id, from: started, interval: days > 30 ? 'day' : 'hour' })}`)
        : Promise.resolve(null),
    [id, started, stats.data?.sent, stats.data?.opened],
  );
  useEffect(() => {
    const timer = setInterval(stats.reload, live || stats.data?.status === 'SENDING' ? 2000 : 15000);
    return () => clearInterval(timer);
  }, [live, stats.data?.status]);
  return (
    <section aria-label="Statistics">
      <h2>Statistics</h2>
      <ErrorBox error={stats.error ?? series.error} />
      {stats.data && (
        <>
          <dl class="figures">
            {COUNTERS.map((k) => (
              <div key={k}>
                <dt>{k === 'totalRecipients' ? 'recipients' : k}</dt>
                <dd data-testid={`stat-${k}`}>{stats.data[k]}</dd>
              </div>
            ))}
          </dl>
          <p class="muted">
            Open rate {stats.data.openRate} %, click rate {stats.data.clickRate} %, bounce rate {stats.data.bounceRate}{' '}
            %{stats.data.lastError && <> - last error: {stats.data.lastError}</>}
          </p>
          {series.data && <Chart data={series.data.data} />}
        </>
      )}
    </section>
  );
}
