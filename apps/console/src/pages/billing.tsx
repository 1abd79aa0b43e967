import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, get, post } from '../api';
import type { Project } from '../main';
import { ErrorBox, Loading, Page, useAction, useLoad, when } from '../ui';

const CATEGORIES: [string, string][] = [
  ['emails', 'Emails this month'],
  ['contacts', 'Contacts'],
  ['events', 'Tracked events this month'],
];

interface Line {
  used: number;
  limit: number | null;
  remaining: number | null;
}

/** Consumption against the monthly caps, the caps themselves (empty = unlimited), and the payment provider. */
export function BillingPage({ project }: { project: Project }) {
  const base = `/users/@me/projects/${project.id}`;
  const usage = useLoad(() => get(`${base}/billing-consumption`), [project.id]);
  const limits = useLoad(() => get<Record<string, number | null>>(`${base}/billing-limits`), [project.id]);
  const invoices = useLoad(() => get(`${base}/billing-invoices`), [project.id]);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const save = useAction();
  const pay = useAction();
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (limits.data)
      setDraft(
        Object.fromEntries(CATEGORIES.map(([k]) => [k, limits.data![k] === null ? '' : String(limits.data![k])])),
      );
  }, [limits.data]);
  const manage = project.role !== 'member';
  const noProvider = (e: unknown) => e instanceof ApiError && e.status === 501;
  return (
    <Page title="Billing">
      <h2>This period</h2>
      <ErrorBox error={usage.error} />
      <Loading what={usage.data} />
      {usage.data && (
        <>
          <p class="muted">
            {when(usage.data.period.start)} to {when(usage.data.period.end)}
          </p>
          <table>
            <thead>
              <tr>
                <th>Category</th>
                <th>Used</th>
                <th>Cap</th>
                <th>Remaining</th>
              </tr>
            </thead>
            <tbody>
              {CATEGORIES.map(([k, label]) => {
                const line: Line = usage.data[k];
                return (
                  <tr key={k}>
                    <th scope="row">{label}</th>
                    <td data-testid={`used-${k}`}>{line.used}</td>
                    <td>{line.limit ?? 'unlimited'}</td>
                    <td>{line.remaining ?? '-'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </>
      )}
      <h2>Caps</h2>
      <p class="muted">A send, import or track past a cap is refused (402 BILLING_LIMIT_REACHED). Empty: unlimited.</p>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setSaved(false);
          const body = Object.fromEntries(
            CATEGORIES.map(([k]) => [k, draft[k]?.trim() === '' ? null : Number(draft[k])]),
          );
          const out = await save.run(() => api('PUT', `${base}/billing-limits`, body));
          if (out) {
            setSaved(true);
            usage.reload();
          }
        }}
      >
        <fieldset disabled={!manage} class="inline">
          {CATEGORIES.map(([k, label]) => (
            <div class="field" key={k}>
              <label for={`cap-${k}`}>{label}</label>
              <input
                id={`cap-${k}`}
                inputMode="numeric"
                value={draft[k] ?? ''}
                aria-invalid={save.error instanceof ApiError && save.error.field(k) ? 'true' : undefined}
                onInput={(e) => setDraft({ ...draft, [k]: e.currentTarget.value })}
              />
              {save.error instanceof ApiError && save.error.field(k) && (
                <span class="field-error">{save.error.field(k)}</span>
              )}
            </div>
          ))}
          <button type="submit" disabled={save.busy}>
            Save caps
          </button>
        </fieldset>
      </form>
      {saved && <p role="status">Caps saved.</p>}
      <ErrorBox error={save.error} />
      <h2>Plan and invoices</h2>
      {noProvider(invoices.error) ? (
        <p class="muted">No payment provider is configured on this deployment.</p>
      ) : (
        <>
          <ErrorBox error={invoices.error} />
          <button
            type="button"
            disabled={pay.busy}
            onClick={async () => {
              const out = await pay.run(() => post(`${base}/checkout`));
              if (out?.url) location.assign(out.url);
            }}
          >
            Upgrade
          </button>{' '}
          <button
            type="button"
            disabled={pay.busy}
            onClick={async () => {
              const out = await pay.run(() => post(`${base}/billing-portal`));
              if (out?.url) location.assign(out.url);
            }}
          >
            Manage billing
          </button>
          <ErrorBox error={pay.error} />
          <ul>
            {(invoices.data?.data ?? []).map((i: any) => (
              <li key={i.id}>
                {i.number ?? i.id}: {(i.amountDue / 100).toFixed(2)} {i.currency?.toUpperCase()} ({i.status}),{' '}
                {when(i.createdAt)} {i.hostedInvoiceUrl && <a href={i.hostedInvoiceUrl}>view</a>}
              </li>
            ))}
          </ul>
        </>
      )}
    </Page>
  );
}
