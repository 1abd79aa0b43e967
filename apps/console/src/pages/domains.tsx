import { useState } from 'preact/hooks';
import { api, get, post } from '../api';
import type { Project } from '../main';
import { CopyButton, ErrorBox, Field, Loading, Page, useAction, useLoad, when } from '../ui';

interface DnsRecord {
  type: string;
  name: string;
  value: string;
  purpose: string;
  verified: boolean;
}

interface Domain {
  id: string;
  domain: string;
  status: string;
  records: DnsRecord[];
  lastCheckedAt: string | null;
}

export function DomainsPage({ project, embedded }: { project: Project; embedded: boolean }) {
  const list = useLoad(() => get<Domain[]>(`/domains/project/${project.id}`), [project.id]);
  const [domain, setDomain] = useState('');
  const add = useAction();
  return (
    <Page title="Domains">
      {embedded && (
        <p class="notice" data-testid="sandbox-notice">
          This platform runs in embedded mode: every project may send from <code>sandbox@sandbox.localhost</code> (any
          address at <code>sandbox.localhost</code>) without a domain. That mail goes to the local sink only: read it in
          the <a href="/dev/mail">Mail viewer</a>. Real mail needs a relay (<code>SMTP_URL</code>) and a verified
          domain.
        </p>
      )}
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          if (await add.run(() => post('/domains', { domain }))) {
            setDomain('');
            list.reload();
          }
        }}
      >
        <Field
          label="Domain to send from"
          name="domain"
          placeholder="mail.example.com"
          value={domain}
          error={add.error}
          onInput={(e) => setDomain(e.currentTarget.value)}
        />
        <button type="submit" disabled={add.busy}>
          Add domain
        </button>
      </form>
      <ErrorBox error={add.error ?? list.error} />
      <Loading what={list.data} />
      {list.data?.length === 0 && <p class="muted">No domain yet.</p>}
      {list.data?.map((d) => (
        <DomainCard key={d.id} initial={d} onRemoved={list.reload} />
      ))}
    </Page>
  );
}

function DomainCard({ initial, onRemoved }: { initial: Domain; onRemoved: () => void }) {
  const [d, setD] = useState(initial);
  const verify = useAction();
  const remove = useAction();
  const missing = d.records.filter((r) => !r.verified && r.purpose !== 'spf');
  return (
    <article class="card" aria-label={d.domain}>
      <header class="page-head">
        <h2>
          {d.domain} <span class={`badge ${d.status}`}>{d.status}</span>
        </h2>
        <div class="actions">
          <button
            type="button"
            disabled={verify.busy}
            onClick={async () => {
              const next = await verify.run(() => get<Domain>(`/domains/${d.id}/verify`));
              if (next) setD(next);
            }}
          >
            Verify now
          </button>
          <button
            type="button"
            class="danger"
            onClick={async () => {
              if (await remove.run(() => api('DELETE', `/domains/${d.id}`).then(() => true))) onRemoved();
            }}
          >
            Remove
          </button>
        </div>
      </header>
      <p class="muted">Last checked: {when(d.lastCheckedAt)}</p>
      {d.status !== 'verified' && d.lastCheckedAt && missing.length > 0 && (
        <p class="error" role="status">
          Not found yet: {missing.map((r) => `${r.purpose} (${r.name})`).join(', ')}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Purpose</th>
            <th>Type</th>
            <th>Name</th>
            <th>Value</th>
            <th>Found</th>
          </tr>
        </thead>
        <tbody>
          {d.records.map((r) => (
            <tr key={r.purpose}>
              <td>{r.purpose}</td>
              <td>{r.type}</td>
              <td>
                <code>{r.name}</code> <CopyButton text={r.name} />
              </td>
              <td class="wrap">
                <code>{r.value.length > 60 ? `${r.value.slice(0, 60)}...` : r.value}</code>{' '}
                <CopyButton text={r.value} />
              </td>
              <td>{r.verified ? 'yes' : 'no'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <ErrorBox error={verify.error ?? remove.error} />
    </article>
  );
}
