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

/** Embedded mode: what to do without a domain of one's own (the sandbox sender, the mail viewer). */
const SANDBOX_HINTS: Record<string, string> = {
  hasVerifiedDomain: '(not needed to try things out: send from sandbox@sandbox.localhost)',
  hasSentEmail: '(from sandbox@sandbox.localhost; read it in the Mail viewer)',
};

export function OverviewPage({ project, me, embedded }: { project: Project; me: Me; embedded: boolean }) {
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
          {/* Embedded mode delivers nowhere: the link is in the mail viewer, shown to this account only. */}
          {embedded && (
            <>
              {' '}
              It arrives in the <a href="/dev/mail">Mail viewer</a>.
            </>
          )}
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
              {!s.done && embedded && SANDBOX_HINTS[s.key] && <span class="muted"> {SANDBOX_HINTS[s.key]}</span>}
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
