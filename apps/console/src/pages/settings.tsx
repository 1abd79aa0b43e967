import { useState } from 'preact/hooks';
import { api, get, post } from '../api';
import type { Me, Project } from '../main';
import { CopyButton, ErrorBox, Field, Loading, Page, useAction, useLoad, when } from '../ui';

interface Keys {
  publicKey?: string;
  secretKey?: string;
}

/** API keys (shown in full once, after creation or rotation), project name, members and invitations. */
export function SettingsPage(props: { project: Project; me: Me; onChanged: () => Promise<unknown> }) {
  const { project } = props;
  const stored = sessionStorage.getItem(`keys:${project.id}`);
  const [keys, setKeys] = useState<Keys>(stored ? JSON.parse(stored) : {});
  const [confirming, setConfirming] = useState(false);
  const rotate = useAction();
  const [name, setName] = useState(project.name);
  const rename = useAction();
  return (
    <Page title="Settings">
      <h2>API keys</h2>
      <p class="muted">
        The secret key works on every API endpoint (keep it on your servers); the public key only on{' '}
        <code>POST /v1/track</code>. Full keys are shown once: copy them now.
      </p>
      <table>
        <tbody>
          <KeyRow label="Public key" full={keys.publicKey} prefix={project.publicKeyPrefix} />
          <KeyRow label="Secret key" full={keys.secretKey} prefix={project.secretKeyPrefix} />
        </tbody>
      </table>
      {confirming ? (
        <div class="confirm" role="dialog" aria-label="Confirm key rotation">
          <p>Both keys change; the old ones stop working within seconds. Integrations need the new keys.</p>
          <button
            type="button"
            class="danger"
            disabled={rotate.busy}
            onClick={async () => {
              const p = await rotate.run(() => post<Project>(`/users/@me/projects/${project.id}/regenerate-keys`));
              setConfirming(false);
              if (p) {
                const k = { publicKey: p.publicKey, secretKey: p.secretKey };
                sessionStorage.setItem(`keys:${project.id}`, JSON.stringify(k));
                setKeys(k);
                await props.onChanged();
              }
            }}
          >
            Rotate both keys
          </button>{' '}
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" onClick={() => setConfirming(true)}>
          Rotate keys...
        </button>
      )}
      <ErrorBox error={rotate.error} />

      <h2>Project</h2>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          if (await rename.run(() => api('PATCH', `/users/@me/projects/${project.id}`, { name })))
            await props.onChanged();
        }}
      >
        <Field
          label="Name"
          name="name"
          value={name}
          error={rename.error}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <button type="submit" disabled={rename.busy}>
          Save
        </button>
      </form>
      <ErrorBox error={rename.error} />
      <NewProject onChanged={props.onChanged} />
      <MyInvitations onChanged={props.onChanged} />
      <Members project={project} />
    </Page>
  );
}

function KeyRow(props: { label: string; full?: string; prefix: string }) {
  return (
    <tr>
      <th scope="row">{props.label}</th>
      <td>
        <code data-testid={props.label}>{props.full ?? `${props.prefix}...`}</code>{' '}
        {props.full && <CopyButton text={props.full} />}
      </td>
    </tr>
  );
}

/** Invitations addressed to the signed-in user: accept (the project joins the switcher) or decline. */
export function MyInvitations({ onChanged }: { onChanged: () => Promise<unknown> }) {
  const list = useLoad(() => get('/users/@me/invitations'), []);
  const action = useAction();
  const pending = (list.data ?? []).filter((i: { status: string }) => i.status === 'pending');
  if (pending.length === 0) return <ErrorBox error={list.error} />;
  const answer = async (id: string, verb: 'accept' | 'decline') => {
    if (await action.run(() => post(`/users/@me/invitations/${id}/${verb}`))) {
      list.reload();
      await onChanged();
    }
  };
  return (
    <section aria-label="Your invitations">
      <h2>Invitations for you</h2>
      <ul>
        {pending.map((i: { id: string; projectName: string; role: string; invitedBy: { email: string } }) => (
          <li key={i.id}>
            {i.projectName} as {i.role}, from {i.invitedBy.email}{' '}
            <button type="button" class="small" onClick={() => answer(i.id, 'accept')}>
              Accept
            </button>{' '}
            <button type="button" class="small" onClick={() => answer(i.id, 'decline')}>
              Decline
            </button>
          </li>
        ))}
      </ul>
      <ErrorBox error={action.error} />
    </section>
  );
}

function NewProject({ onChanged }: { onChanged: () => Promise<unknown> }) {
  const [name, setName] = useState('');
  const action = useAction();
  return (
    <form
      class="inline"
      onSubmit={async (e) => {
        e.preventDefault();
        const p = await action.run(() => post<Project>('/users/@me/projects', { name }));
        if (p) {
          sessionStorage.setItem(`keys:${p.id}`, JSON.stringify({ publicKey: p.publicKey, secretKey: p.secretKey }));
          setName('');
          await onChanged();
        }
      }}
    >
      <Field
        label="New project"
        name="name"
        value={name}
        error={action.error}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <button type="submit" disabled={action.busy}>
        Create
      </button>
      <ErrorBox error={action.error} />
    </form>
  );
}

function Members({ project }: { project: Project }) {
  const members = useLoad(() => get(`/projects/${project.id}/members`), [project.id]);
  const invitations = useLoad(
    () => (project.role === 'member' ? Promise.resolve([]) : get(`/projects/${project.id}/invitations`)),
    [project.id],
  );
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('member');
  const invite = useAction();
  const change = useAction();
  return (
    <>
      <h2>Members</h2>
      <ErrorBox error={members.error ?? change.error} />
      <Loading what={members.data} />
      {members.data && (
        <table>
          <thead>
            <tr>
              <th>Email</th>
              <th>Role</th>
              <th>Since</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {members.data.map((m: { userId: string; email: string; role: string; createdAt: string }) => (
              <tr key={m.userId}>
                <td>{m.email}</td>
                <td>{m.role}</td>
                <td>{when(m.createdAt)}</td>
                <td>
                  {m.role !== 'owner' && (
                    <button
                      type="button"
                      class="small"
                      onClick={async () => {
                        await change.run(() => api('DELETE', `/projects/${project.id}/members/${m.userId}`));
                        members.reload();
                      }}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {project.role !== 'member' && (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await invite.run(() => post(`/projects/${project.id}/members`, { email, role }))) {
              setEmail('');
              invitations.reload();
            }
          }}
        >
          <Field
            label="Invite by email"
            name="email"
            type="email"
            value={email}
            error={invite.error}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
          <div class="field">
            <label for="invite-role">Role</label>
            <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
              <option value="member">member</option>
              <option value="admin">admin</option>
            </select>
          </div>
          <button type="submit" disabled={invite.busy}>
            Invite
          </button>
          <ErrorBox error={invite.error} />
        </form>
      )}
      {invitations.data && invitations.data.length > 0 && (
        <>
          <h3>Pending invitations</h3>
          <ul>
            {invitations.data.map((i: { id: string; email: string; role: string; expiresAt: string }) => (
              <li key={i.id}>
                {i.email} ({i.role}), expires {when(i.expiresAt)}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}
