import { useEffect, useState } from 'preact/hooks';
import { get, post } from '../api';
import type { Me } from '../main';
import { ErrorBox, Field, Link, useAction } from '../ui';

interface Props {
  path: string;
  signupEnabled: boolean;
  onSignedIn: (me: Me) => Promise<void>;
}

/** Sign up, log in, forgotten password, password reset and email verification. */
export function AuthPage({ path, signupEnabled, onSignedIn }: Props) {
  const [bare, search] = path.split('?');
  const token = new URLSearchParams(search ?? '').get('token') ?? '';
  const oauthError = new URLSearchParams(search ?? '').get('error') ?? '';
  if (bare === '/app/signup') return <Credentials mode="signup" enabled={signupEnabled} onSignedIn={onSignedIn} />;
  if (bare === '/app/forgot') return <Forgot />;
  if (bare === '/app/reset') return <Reset token={token} />;
  if (bare === '/app/verify') return <Verify token={token} />;
  return <Credentials mode="login" enabled={signupEnabled} onSignedIn={onSignedIn} oauthError={oauthError} />;
}

/** What `/auth/oauth/{provider}/callback` puts in `?error=` (gateway routes/oauth.ts). */
const OAUTH_ERRORS: Record<string, string> = {
  oauth_state: 'The sign-in expired or did not start in this browser. Try again.',
  oauth_denied: 'You declined the sign-in at the provider.',
  oauth_provider: 'The provider refused the sign-in. Try again.',
  oauth_email_unverified: 'The provider reports no verified email address for your account.',
  oauth_email_invalid: "The provider's email address for your account is not one an account here can use.",
  signup_disabled: 'Sign-up is disabled on this deployment, and no account uses that address.',
};

/**
 * The message for a known `?error=` code; any other value gets a fixed one, never the value itself: a link to
 * `/app/login?error=<text>` must not put an attacker's words (a phone number to call) on the platform's page.
 */
const oauthMessage = (code: string) =>
  Object.hasOwn(OAUTH_ERRORS, code) ? OAUTH_ERRORS[code] : 'Sign-in with the provider failed. Try again.';

/** "Continue with GitHub/Google": the providers `/auth/oauth-config` lists (none: nothing shown). */
function OAuthButtons() {
  const [providers, setProviders] = useState<{ id: string; name: string }[]>([]);
  useEffect(() => {
    get<{ providers: { id: string; name: string }[] }>('/auth/oauth-config').then(
      (c) => setProviders(c.providers),
      () => undefined,
    );
  }, []);
  if (providers.length === 0) return null;
  return (
    <div class="oauth">
      {providers.map((p) => (
        <a key={p.id} class="button" href={`/auth/oauth/${encodeURIComponent(p.id)}`}>
          Continue with {p.name}
        </a>
      ))}
    </div>
  );
}

function Credentials(props: {
  mode: 'login' | 'signup';
  enabled: boolean;
  onSignedIn: Props['onSignedIn'];
  oauthError?: string;
}) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const signup = props.mode === 'signup';
  return (
    <main class="narrow">
      <h1>{signup ? 'Create an account' : 'Log in'}</h1>
      {props.oauthError && (
        <div class="error" role="alert">
          {oauthMessage(props.oauthError)}
        </div>
      )}
      <OAuthButtons />
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const me = await action.run(() => post<Me>(signup ? '/auth/signup' : '/auth/login', { email, password }));
          if (me) await props.onSignedIn(me);
        }}
      >
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="email"
          value={email}
          error={action.error}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete={signup ? 'new-password' : 'current-password'}
          value={password}
          error={action.error}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <ErrorBox error={action.error} />
        <button type="submit" disabled={action.busy}>
          {signup ? 'Sign up' : 'Log in'}
        </button>
      </form>
      <p>
        {signup ? (
          <Link href="/app/login">I have an account</Link>
        ) : (
          <>
            {props.enabled && <Link href="/app/signup">Create an account</Link>}
            {' · '}
            <Link href="/app/forgot">Forgot your password?</Link>
          </>
        )}
      </p>
    </main>
  );
}

function Forgot() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState(false);
  const action = useAction();
  return (
    <main class="narrow">
      <h1>Reset your password</h1>
      {sent ? (
        <p role="status">If an account uses {email}, a reset link is on its way.</p>
      ) : (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            if (await action.run(() => post('/auth/request-password-reset', { email }))) setSent(true);
          }}
        >
          <Field
            label="Email"
            name="email"
            type="email"
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
          <ErrorBox error={action.error} />
          <button type="submit" disabled={action.busy}>
            Send the link
          </button>
        </form>
      )}
      <p>
        <Link href="/app/login">Back to log in</Link>
      </p>
    </main>
  );
}

function Reset({ token }: { token: string }) {
  const [password, setPassword] = useState('');
  const [done, setDone] = useState(false);
  const action = useAction();
  return (
    <main class="narrow">
      <h1>Choose a new password</h1>
      {done ? (
        <p role="status">
          Your password is changed. <Link href="/app/login">Log in</Link>
        </p>
      ) : (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            if (await action.run(() => post('/auth/reset-password', { token, password }))) setDone(true);
          }}
        >
          <Field
            label="New password"
            name="password"
            type="password"
            autoComplete="new-password"
            value={password}
            error={action.error}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
          <ErrorBox error={action.error} />
          <button type="submit" disabled={action.busy}>
            Change password
          </button>
        </form>
      )}
    </main>
  );
}

function Verify({ token }: { token: string }) {
  const action = useAction();
  const [done, setDone] = useState(false);
  useEffect(() => {
    action.run(() => post('/auth/verify-email', { token })).then((r) => r && setDone(true));
  }, [token]);
  return (
    <main class="narrow">
      <h1>Email verification</h1>
      {done && <p role="status">Your email address is verified.</p>}
      <ErrorBox error={action.error} />
      <p>
        <Link href="/app">Go to the console</Link>
      </p>
    </main>
  );
}
