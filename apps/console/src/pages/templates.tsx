import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, get, post, query } from '../api';
import { ErrorBox, Field, Link, NewLink, Page, PagedTable, TextArea, navigate, useAction, useLoad, when } from '../ui';

interface Template {
  id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: string;
  updatedAt: string;
}

const TYPES = ['MARKETING', 'TRANSACTIONAL', 'HEADLESS'];

export function TemplatesPage() {
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const list = useLoad(() => get(`/templates${query({ search, page, pageSize: 20 })}`), [search, page]);
  return (
    <Page title="Templates" actions={<NewLink href="/app/templates/new" label="New template" />}>
      <div class="field">
        <label for="template-search">Search</label>
        <input id="template-search" type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
      </div>
      <PagedTable<Template>
        list={list}
        page={page}
        onPage={setPage}
        empty="No templates yet."
        columns={[
          { label: 'Name', cell: (t) => <Link href={`/app/templates/${t.id}`}>{t.name}</Link> },
          { label: 'Subject', cell: (t) => t.subject },
          { label: 'Type', cell: (t) => t.type },
          { label: 'Updated', cell: (t) => when(t.updatedAt) },
        ]}
      />
    </Page>
  );
}

const BLANK = {
  name: '',
  description: '',
  subject: '',
  body: '<p>Hello {{firstName ?? "there"}},</p>\n',
  from: '',
  fromName: '',
  replyTo: '',
  type: 'MARKETING',
};

/** The editor: fields on the left, the server's rendering with sample data on the right. */
export function TemplatePage({ id }: { id: string }) {
  const isNew = id === 'new';
  const [t, setT] = useState<typeof BLANK | null>(isNew ? BLANK : null);
  const [sample, setSample] = useState('{"email": "ann@example.com", "firstName": "Ann"}');
  const [preview, setPreview] = useState<{ subject: string; body: string } | null>(null);
  const [previewError, setPreviewError] = useState<unknown>(null);
  const save = useAction();
  const other = useAction();
  const [saved, setSaved] = useState(false);
  const usage = useLoad(() => (isNew ? Promise.resolve(null) : get(`/templates/${id}/usage`)), [id]);

  useEffect(() => {
    if (isNew) return;
    get<Template>(`/templates/${id}`).then(
      (x) =>
        setT({
          name: x.name,
          description: x.description ?? '',
          subject: x.subject,
          body: x.body,
          from: x.from,
          fromName: x.fromName ?? '',
          replyTo: x.replyTo ?? '',
          type: x.type,
        }),
      save.setError,
    );
  }, [id]);

  // Live preview, rendered by the server (the same Liquid as sending), 300 ms after the last keystroke.
  useEffect(() => {
    if (!t) return;
    const timer = setTimeout(async () => {
      let data: unknown;
      try {
        data = JSON.parse(sample || '{}');
      } catch {
        setPreviewError(new Error('Sample data is not valid JSON'));
        return;
      }
      try {
        setPreview(await post('/templates/preview', { subject: t.subject, body: t.body, data }));
        setPreviewError(null);
      } catch (e) {
        setPreviewError(e);
      }
    }, 300);
    return () => clearTimeout(timer);
  }, [t?.subject, t?.body, sample]);

  if (!t) return <ErrorBox error={save.error} />;
  const set = (k: keyof typeof BLANK) => (e: { currentTarget: { value: string } }) =>
    setT({ ...t, [k]: e.currentTarget.value });
  const bodyError = previewError instanceof ApiError ? previewError.field('body') : undefined;
  const subjectError = previewError instanceof ApiError ? previewError.field('subject') : undefined;

  return (
    <Page title={isNew ? 'New template' : t.name}>
      <div class="split">
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            setSaved(false);
            const payload = {
              ...t,
              description: t.description || undefined,
              fromName: t.fromName || undefined,
              replyTo: t.replyTo || undefined,
            };
            const out = await save.run(() =>
              isNew ? post<Template>('/templates', payload) : api<Template>('PATCH', `/templates/${id}`, payload),
            );
            if (out) {
              setSaved(true);
              if (isNew) navigate(`/app/templates/${out.id}`);
            }
          }}
        >
          <Field label="Name" name="name" value={t.name} error={save.error} onInput={set('name')} />
          <Field label="Subject" name="subject" value={t.subject} error={save.error} onInput={set('subject')} />
          {subjectError && <p class="field-error">{subjectError}</p>}
          <Field label="From (email)" name="from" value={t.from} error={save.error} onInput={set('from')} />
          <Field label="From name" name="fromName" value={t.fromName} error={save.error} onInput={set('fromName')} />
          <Field label="Reply to" name="replyTo" value={t.replyTo} error={save.error} onInput={set('replyTo')} />
          <div class="field">
            <label for="template-type">Type</label>
            <select id="template-type" value={t.type} onChange={set('type')}>
              {TYPES.map((x) => (
                <option key={x}>{x}</option>
              ))}
            </select>
          </div>
          <TextArea label="Body (HTML with Liquid)" name="body" rows={14} value={t.body} onInput={set('body')} />
          {bodyError && (
            <p class="field-error" role="alert" data-testid="liquid-error">
              {bodyError}
            </p>
          )}
          <ErrorBox error={save.error} />
          {saved && <p role="status">Saved.</p>}
          <button type="submit" disabled={save.busy}>
            {isNew ? 'Create template' : 'Save'}
          </button>
        </form>
        <div>
          <TextArea
            label="Sample data (JSON)"
            name="sample"
            rows={3}
            value={sample}
            onInput={(e) => setSample(e.currentTarget.value)}
          />
          <h2>Preview</h2>
          {previewError && !(previewError instanceof ApiError && previewError.errors.length) ? (
            <ErrorBox error={previewError} />
          ) : null}
          {preview && (
            <>
              <p>
                <strong>Subject:</strong> <span data-testid="preview-subject">{preview.subject}</span>
              </p>
              <iframe class="preview" title="Preview" sandbox="" srcDoc={preview.body} />
            </>
          )}
          {!isNew && <TemplateActions id={id} action={other} />}
          {usage.data && (usage.data.campaigns?.length > 0 || usage.data.workflows?.length > 0) && (
            <p class="muted" data-testid="template-usage">
              Used by {usage.data.campaigns.length} campaigns and {usage.data.workflows.length} workflow steps.
            </p>
          )}
        </div>
      </div>
    </Page>
  );
}

/** What a test send did; a withheld one says why (a MARKETING template reaches subscribed contacts only). */
function testOutcome(to: string, email?: { status?: string; reason?: string }): string {
  if (email?.status !== 'suppressed') return `Sent to ${to}: ${email?.status ?? 'queued'}`;
  if (email.reason === 'unsubscribed')
    return (
      `Not sent to ${to}: suppressed (unsubscribed). MARKETING mail goes to subscribed contacts only, and a send ` +
      'creates a new contact unsubscribed: subscribe it under Contacts, or test with a TRANSACTIONAL template.'
    );
  return `Not sent to ${to}: suppressed (${email.reason ?? 'withheld'}).`;
}

function TemplateActions({ id, action }: { id: string; action: ReturnType<typeof useAction> }) {
  const [to, setTo] = useState('');
  const [sent, setSent] = useState<string | null>(null);
  return (
    <>
      <h2>Test and copy</h2>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          const out = await action.run(() => post('/v1/send', { to, template: id }));
          if (out) setSent(testOutcome(to, out.data?.emails?.[0]));
        }}
      >
        <Field label="Send a test to" name="to" type="email" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
        <button type="submit" disabled={action.busy}>
          Send test
        </button>
      </form>
      {sent && <p role="status">{sent}</p>}
      <button
        type="button"
        onClick={async () => {
          const copy = await action.run(() => post(`/templates/${id}/duplicate`));
          if (copy) navigate(`/app/templates/${copy.id}`);
        }}
      >
        Duplicate
      </button>{' '}
      <button
        type="button"
        class="danger"
        onClick={async () => {
          if (await action.run(() => api('DELETE', `/templates/${id}`).then(() => true))) navigate('/app/templates');
        }}
      >
        Delete
      </button>
      <ErrorBox error={action.error} />
    </>
  );
}
