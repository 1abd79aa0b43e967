import { useEffect, useState } from 'preact/hooks';
import { get, query } from '../api';
import { DataTable, ErrorBox, Link, Loading, Page, useLoad, when } from '../ui';

/** The subject of an email item, and why it was withheld or bounced (`reason`) when it was. */
function details(data?: { subject?: string; reason?: string }): string {
  return [data?.subject, data?.reason].filter(Boolean).join(': ');
}

export function ActivityPage() {
  const types = useLoad(() => get('/activity/types'), []);
  const [type, setType] = useState('');
  const [cursors, setCursors] = useState<string[]>(['']);
  const cursor = cursors[cursors.length - 1];
  const feed = useLoad(() => get(`/activity${query({ type, cursor, limit: 30 })}`), [type, cursor]);
  const recent = useLoad(() => get('/activity/recent-count?minutes=5'), []);
  // The live indicator: recent activity, asked again every 10 s.
  useEffect(() => {
    const timer = setInterval(recent.reload, 10_000);
    return () => clearInterval(timer);
  }, []);
  return (
    <Page
      title="Activity"
      actions={
        <span class="live" role="status" aria-live="polite">
          <span class={`dot ${recent.data?.count ? 'on' : ''}`} aria-hidden="true" /> {recent.data?.count ?? 0} in the
          last 5 minutes
        </span>
      }
    >
      <div class="field">
        <label for="activity-type">Type</label>
        <select
          id="activity-type"
          value={type}
          onChange={(e) => {
            setType(e.currentTarget.value);
            setCursors(['']);
          }}
        >
          <option value="">All</option>
          {types.data?.types.map((t: string) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </div>
      <ErrorBox error={feed.error} />
      <Loading what={feed.data} />
      {feed.data && (
        <>
          <table>
            <thead>
              <tr>
                <th>When</th>
                <th>Type</th>
                <th>Contact</th>
                <th>Details</th>
              </tr>
            </thead>
            <tbody>
              {feed.data.data.map((a: any) => (
                <tr key={a.id}>
                  <td>{when(a.occurredAt)}</td>
                  <td>{a.type === 'event' ? `event: ${a.name}` : a.type}</td>
                  <td>
                    {a.contactId ? <Link href={`/app/contacts/${a.contactId}`}>{a.email ?? a.contactId}</Link> : '-'}
                  </td>
                  <td class="muted wrap">{details(a.data)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
              Newer
            </button>
            <button
              type="button"
              disabled={!feed.data.hasMore}
              onClick={() => setCursors([...cursors, feed.data.cursor])}
            >
              Older
            </button>
          </nav>
        </>
      )}
    </Page>
  );
}

const SERIES: [string, string][] = [
  ['sent', '#357'],
  ['delivered', '#2a7'],
  ['opened', '#c80'],
  ['clicked', '#a3c'],
  ['bounced', '#c33'],
];

export function AnalyticsPage() {
  const [days, setDays] = useState(30);
  const series = useLoad(
    () => get(`/analytics/timeseries${query({ from: new Date(Date.now() - days * 86_400_000).toISOString() })}`),
    [days],
  );
  const top = useLoad(() => get(`/analytics/top-events${query({ days, limit: 10 })}`), [days]);
  const campaigns = useLoad(() => get('/analytics/top-campaigns'), []);
  return (
    <Page title="Analytics">
      <div class="field">
        <label for="analytics-days">Period</label>
        <select id="analytics-days" value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
          <option value={7}>7 days</option>
          <option value={30}>30 days</option>
          <option value={90}>90 days</option>
        </select>
      </div>
      <ErrorBox error={series.error} />
      <Loading what={series.data} />
      {series.data && <Chart data={series.data.data} />}
      {series.data && (
        <dl class="figures">
          {SERIES.map(([k]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{series.data.totals[k]}</dd>
            </div>
          ))}
        </dl>
      )}
      <h2>Top events</h2>
      <ErrorBox error={top.error} />
      <DataTable
        rows={top.data?.data ?? []}
        rowKey={(e: any) => e.name}
        empty="No events in this period."
        columns={[
          { label: 'Event', cell: (e: any) => e.name },
          { label: 'Count', cell: (e: any) => e.count },
          { label: 'Contacts', cell: (e: any) => e.contacts },
          { label: 'Last seen', cell: (e: any) => when(e.lastSeen) },
        ]}
      />
      <h2>Top campaigns</h2>
      <ErrorBox error={campaigns.error} />
      <ul>
        {(campaigns.data?.data ?? []).map((c: any) => (
          <li key={c.campaignId ?? c.id}>
            <Link href={`/app/campaigns/${c.campaignId ?? c.id}`}>{c.name}</Link>: {c.sent} sent, {c.opened} opened
          </li>
        ))}
      </ul>
    </Page>
  );
}

export function Chart({ data }: { data: Record<string, number | string>[] }) {
  const w = 640;
  const h = 180;
  const max = Math.max(1, ...data.flatMap((d) => SERIES.map(([k]) => Number(d[k]))));
  const x = (i: number) => (data.length <= 1 ? 0 : (i / (data.length - 1)) * (w - 40)) + 30;
  const y = (v: number) => h - 20 - (v / max) * (h - 30);
  return (
    <figure>
      <svg width={w} height={h} role="img" aria-label="Emails over time">
        <line x1="30" y1={h - 20} x2={w - 10} y2={h - 20} stroke="#999" />
        <text x="0" y="14" class="edge-label">
          {max}
        </text>
        {SERIES.map(([k, color]) => (
          <polyline
            key={k}
            fill="none"
            stroke={color}
            stroke-width="2"
            points={data.map((d, i) => `${x(i)},${y(Number(d[k]))}`).join(' ')}
          />
        ))}
      </svg>
      <figcaption>
        {SERIES.map(([k, color]) => (
          <span key={k} class="legend">
            <span style={{ background: color }} aria-hidden="true" /> {k}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
