import type { ComponentChildren, InputHTMLAttributes, TextareaHTMLAttributes } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

// Routing: paths under /app, pushState, one listener.
const listeners = new Set<() => void>();
window.addEventListener('popstate', () => {
  for (const l of listeners) l();
});

export function navigate(path: string): void {
  history.pushState(null, '', path);
  for (const l of listeners) l();
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const l = () => setPath(location.pathname + location.search);
    listeners.add(l);
    return () => listeners.delete(l);
  }, []);
  return path;
}

/** `/app/contacts/:id` against a path: the params, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const a = path.split('?')[0].split('/');
  if (p.length !== a.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(':')) out[p[i].slice(1)] = decodeURIComponent(a[i]);
    else if (p[i] !== a[i]) return null;
  }
  return out;
}

export function Link(props: { href: string; children: ComponentChildren; class?: string }) {
  return (
    <a
      href={props.href}
      class={props.class}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

/** Loads once per `deps` change; `reload` fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    load().then(
      (d) => live && setData(d),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload, setData };
}

/** Runs an action, keeping its error to show in place. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div class="error" role="alert">
      <strong>{e ? e.message : String((error as Error).message ?? error)}</strong>
      {e && e.errors.length > 0 && (
        <ul>
          {e.errors.map((f) => (
            <li key={f.field + f.message}>
              <code>{f.field}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
      {e?.suggestion && <p>{e.suggestion}</p>}
    </div>
  );
}

type InputProps = InputHTMLAttributes<HTMLInputElement> & { label: string; error?: unknown; name: string };

/** A labelled input; the API's message for this field, if any, under it. */
export function Field({ label, error, name, ...rest }: InputProps) {
  const message = error instanceof ApiError ? error.field(name) : undefined;
  const id = `f-${name}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} name={name} aria-invalid={message ? 'true' : undefined} {...rest} />
      {message && <span class="field-error">{message}</span>}
    </div>
  );
}

export function TextArea(
  props: TextareaHTMLAttributes<HTMLTextAreaElement> & { label: string; name: string; error?: unknown },
) {
  const { label, error, name, ...rest } = props;
  const message = error instanceof ApiError ? error.field(name) : undefined;
  const id = `f-${name}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea id={id} name={name} aria-invalid={message ? 'true' : undefined} {...rest} />
      {message && <span class="field-error">{message}</span>}
    </div>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => undefined);
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

export function Loading({ what }: { what?: unknown }) {
  return what === undefined ? <p class="muted">Loading...</p> : null;
}

export const when = (iso?: string | null) => (iso ? new Date(iso).toLocaleString() : '-');

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} - Console`;
  }, [props.title]);
  return (
    <section>
      <header class="page-head">
        <h1>{props.title}</h1>
        <div class="actions">{props.actions}</div>
      </header>
      {props.children}
    </section>
  );
}

/** Offset pager for `{page, totalPages}` answers. */
export function Pager(props: { page: number; totalPages: number; onPage: (p: number) => void }) {
  if (props.totalPages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        Previous
      </button>
      <span>
        Page {props.page} of {props.totalPages}
      </span>
      <button type="button" disabled={props.page >= props.totalPages} onClick={() => props.onPage(props.page + 1)}>
        Next
      </button>
    </nav>
  );
}

export interface Column<T> {
  label: ComponentChildren;
  cell: (row: T) => ComponentChildren;
  testId?: string;
}

/** A table of rows by columns; `empty` is shown instead when there is no row. */
export function DataTable<T>(props: {
  rows: T[];
  columns: Column<T>[];
  rowKey: (row: T) => string;
  empty?: string;
  caption?: string;
}) {
  if (props.rows.length === 0 && props.empty) return <p class="muted">{props.empty}</p>;
  return (
    <table>
      {props.caption && <caption>{props.caption}</caption>}
      <thead>
        <tr>
          {props.columns.map((c, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: columns are fixed for a table
            <th key={i}>{c.label}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row) => (
          <tr key={props.rowKey(row)}>
            {props.columns.map((c, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: columns are fixed for a table
              <td key={i} data-testid={c.testId}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The "New ..." action of a list page. */
export const NewLink = ({ href, label }: { href: string; label: string }) => (
  <Link href={href} class="button">
    {label}
  </Link>
);

/** An offset-paginated list answer (`{data, total, totalPages}`) as a table with its pager. */
export function PagedTable<T extends { id: string }>(props: {
  list: { data?: { data: T[]; totalPages: number }; error: unknown };
  columns: Column<T>[];
  empty: string;
  page: number;
  onPage: (page: number) => void;
}) {
  const { list } = props;
  return (
    <>
      <ErrorBox error={list.error} />
      <Loading what={list.data} />
      {list.data && (
        <>
          <DataTable rows={list.data.data} columns={props.columns} rowKey={(r) => r.id} empty={props.empty} />
          <Pager page={props.page} totalPages={list.data.totalPages} onPage={props.onPage} />
        </>
      )}
    </>
  );
}
