import { get, post } from '../api';
import type { Me, Project } from '../main';
import { ErrorBox, Link, Loading, Page, useAction, useLoad } from '../ui';

const STEP_PAGES: Record<string, [string, string]> = {
  hasVerifiedDomain: ['Verify a sending domain', '/app/domains'],
  hasTemplate: ['Create a template', '/app/templates'],
  hasContacts: ['Add or import contacts', '/app/contacts'],
  hasTrackedEvent: ['Track a first event', '/app/settings'],
  hasSentEmail: ['Send a first email', '/app/campaigns'],
};

export function OverviewPage({ project, me }: { project: Project; me: Me }) {
  const state = useLoad(() => get(`/projects/${project.id}/setup-state`), [project.id]);
  const stats = useLoad(() => get('/activity/stats?days=30'), [project.id]);
  const resend = useAction();
  return (
    <Page title={project.name}>
      {!me.emailVerified && (
        <div class="notice">
          Your email address is not verified yet.{' '}
          <button
            type="button"
            class="small"
            onClick={() => resend.run(() => post('/auth/request-verification'))}
            disabled={resend.busy}
          >
            Send the verification email again
          </button>
          <ErrorBox error={resend.error} />
        </div>
      )}
      <h2>Getting started</h2>
      <ErrorBox error={state.error} />
      <Loading what={state.data} />
      {state.data && (
        <ol class="steps">
          {state.data.steps.map((s: { key: string; done: boolean }) => (
            <li key={s.key} class={s.done ? 'done' : ''}>
              <span aria-hidden="true">{s.done ? '✓' : '○'}</span>{' '}
              <Link href={STEP_PAGES[s.key]?.[1] ?? '/app'}>{STEP_PAGES[s.key]?.[0] ?? s.key}</Link>
              {s.done && <span class="muted"> (done)</span>}
            </li>
          ))}
        </ol>
      )}
      <h2>Last 30 days</h2>
      <ErrorBox error={stats.error} />
      {stats.data && (
        <dl class="figures">
          {['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'].map((k) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{stats.data.emails[k]}</dd>
            </div>
          ))}
        </dl>
      )}
    </Page>
  );
}
