import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, forgetIssuedKeys, get, post, project, setProject } from './api';
import { AuthPage } from './pages/auth';
import { BillingPage } from './pages/billing';
import { ActivityPage, AnalyticsPage } from './pages/activity';
import { CampaignPage, CampaignsPage } from './pages/campaigns';
import { ContactPage, ContactsPage, ImportPage } from './pages/contacts';
import { DomainsPage } from './pages/domains';
import { OverviewPage } from './pages/overview';
import { SegmentPage, SegmentsPage } from './pages/segments';
import { MyInvitations, SettingsPage } from './pages/settings';
import { TemplatePage, TemplatesPage } from './pages/templates';
import { WorkflowPage, WorkflowsPage } from './pages/workflows';
import { ErrorBox, Field, Link, match, navigate, useAction, usePath } from './ui';

export interface Project {
  id: string;
  name: string;
  role: string;
  publicKeyPrefix: string;
  secretKeyPrefix: string;
  publicKey?: string;
  secretKey?: string;
}

export interface Me {
  id: string;
  email: string;
  emailVerified: boolean;
}

const PUBLIC_PAGES = ['/app/login', '/app/signup', '/app/forgot', '/app/reset', '/app/verify'];

const NAV: [string, string][] = [
  ['/app', 'Overview'],
  ['/app/contacts', 'Contacts'],
  ['/app/templates', 'Templates'],
  ['/app/segments', 'Segments'],
  ['/app/campaigns', 'Campaigns'],
  ['/app/workflows', 'Workflows'],
  ['/app/domains', 'Domains'],
  ['/app/activity', 'Activity'],
  ['/app/analytics', 'Analytics'],
  ['/app/billing', 'Billing'],
  ['/app/settings', 'Settings'],
];

function App() {
  const path = usePath();
  const bare = path.split('?')[0];
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [projects, setProjects] = useState<Project[] | undefined>(undefined);
  const [config, setConfig] = useState<{ embedded?: boolean; signupEnabled?: boolean }>({});

  const loadProjects = async () => {
    const list = await get<Project[]>('/users/@me/projects');
    setProjects(list);
    if (!list.some((p) => p.id === project())) setProject(list[0]?.id ?? null);
    return list;
  };

  useEffect(() => {
    get('/config').then(setConfig, () => undefined);
    get<Me>('/users/@me').then(
      async (u) => {
        setMe(u);
        await loadProjects();
      },
      () => setMe(null),
    );
  }, []);

  if (PUBLIC_PAGES.includes(bare))
    return (
      <AuthPage
        path={path}
        signupEnabled={config.signupEnabled !== false}
        onSignedIn={async (u) => {
          setMe(u);
          await loadProjects();
          navigate('/app');
        }}
      />
    );
  if (me === undefined) return <p class="muted">Loading...</p>;
  if (me === null) {
    navigate('/app/login');
    return null;
  }
  if (projects === undefined) return <p class="muted">Loading...</p>;
  if (projects.length === 0) return <FirstProject onCreated={loadProjects} />;

  const current = projects.find((p) => p.id === project()) ?? projects[0];
  const routes: [string, (p: Record<string, string>) => preact.JSX.Element][] = [
    ['/app', () => <OverviewPage project={current} me={me} embedded={config.embedded === true} />],
    ['/app/contacts', () => <ContactsPage />],
    ['/app/contacts/import', () => <ImportPage />],
    ['/app/contacts/:id', (p) => <ContactPage id={p.id} />],
    ['/app/templates', () => <TemplatesPage />],
    ['/app/templates/:id', (p) => <TemplatePage id={p.id} />],
    ['/app/segments', () => <SegmentsPage />],
    ['/app/segments/:id', (p) => <SegmentPage id={p.id} />],
    ['/app/campaigns', () => <CampaignsPage />],
    ['/app/campaigns/:id', (p) => <CampaignPage id={p.id} />],
    ['/app/workflows', () => <WorkflowsPage />],
    ['/app/workflows/:id', (p) => <WorkflowPage id={p.id} />],
    ['/app/domains', () => <DomainsPage project={current} embedded={config.embedded === true} />],
    ['/app/activity', () => <ActivityPage />],
    ['/app/analytics', () => <AnalyticsPage />],
    ['/app/billing', () => <BillingPage project={current} />],
    ['/app/settings', () => <SettingsPage project={current} me={me} onChanged={loadProjects} />],
  ];
  let page: preact.JSX.Element = (
    <p>
      Not found. <Link href="/app">Back to the overview</Link>
    </p>
  );
  for (const [pattern, view] of routes) {
    const params = match(pattern, bare);
    if (params) {
      page = view(params);
      break;
    }
  }

  return (
    <div class="shell">
      <nav class="side" aria-label="Main">
        <div class="brand">Console</div>
        <label for="project-switch" class="muted">
          Project
        </label>
        <select
          id="project-switch"
          value={current.id}
          onChange={(e) => {
            setProject((e.target as HTMLSelectElement).value);
            navigate('/app');
          }}
        >
          {projects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
        <ul>
          {NAV.map(([href, label]) => (
            <li key={href}>
              <Link href={href} class={bare === href || (href !== '/app' && bare.startsWith(href)) ? 'active' : ''}>
                {label}
              </Link>
            </li>
          ))}
          {config.embedded && (
            <li>
              <a href="/dev/mail">Mail viewer</a>
            </li>
          )}
        </ul>
        <div class="me">
          <span>{me.email}</span>
          <button
            type="button"
            class="small"
            onClick={async () => {
              await post('/auth/logout').catch(() => undefined);
              forgetIssuedKeys();
              setMe(null);
              setProject(null);
              navigate('/app/login');
            }}
          >
            Log out
          </button>
        </div>
      </nav>
      <main key={current.id}>{page}</main>
    </div>
  );
}

function FirstProject({ onCreated }: { onCreated: () => Promise<unknown> }) {
  const [name, setName] = useState('');
  const action = useAction();
  return (
    <main class="narrow">
      <h1>Create your first project</h1>
      <MyInvitations onChanged={onCreated} />
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const p = await action.run(() => post<Project>('/users/@me/projects', { name }));
          if (p) {
            setProject(p.id);
            sessionStorage.setItem(`keys:${p.id}`, JSON.stringify({ publicKey: p.publicKey, secretKey: p.secretKey }));
            await onCreated();
            navigate('/app/settings');
          }
        }}
      >
        <Field label="Project name" name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <ErrorBox error={action.error} />
        <button type="submit" disabled={action.busy}>
          Create project
        </button>
      </form>
    </main>
  );
}

export { ApiError };
render(<App />, document.getElementById('root')!);
