import type { Migration } from '@svc/lib/migrate';

export const migrations: Migration[] = [
  {
    id: '001_identity',
    sql: `
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email text NOT NULL,
        password_hash text NOT NULL,
        email_verified boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX users_email ON users (lower(email));

      CREATE TABLE sessions (
        token_hash text PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX sessions_user ON sessions (user_id);

      CREATE TABLE projects (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        disabled boolean NOT NULL DEFAULT false,
        public_key_hash text NOT NULL UNIQUE,
        public_key_prefix text NOT NULL,
        secret_key_hash text NOT NULL UNIQUE,
        secret_key_prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE members (
        project_id uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, user_id)
      );
      CREATE INDEX members_user ON members (user_id);
    `,
  },
  {
    // A pending invitation stays 'pending' past expires_at (read as expired) until it is closed; the
    // partial unique index allows one open invitation per project and user.
    id: '002_invitations',
    sql: `
      CREATE TABLE invitations (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('admin', 'member')),
        invited_by uuid REFERENCES users ON DELETE SET NULL,
        status text NOT NULL DEFAULT 'pending'
          CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        closed_at timestamptz
      );
      CREATE UNIQUE INDEX invitations_open ON invitations (project_id, user_id) WHERE status = 'pending';
      CREATE INDEX invitations_user ON invitations (user_id) WHERE status = 'pending';
    `,
  },
  {
    // Mailed account tokens (email verification, password reset): only the SHA-256 of the token is kept;
    // used_at makes each single-use, created_at feeds the per-address send throttle.
    id: '003_account_tokens',
    sql: `
      CREATE TABLE account_tokens (
        token_hash text PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
        purpose text NOT NULL CHECK (purpose IN ('verify_email', 'reset_password')),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      );
      CREATE INDEX account_tokens_user ON account_tokens (user_id, purpose, created_at);
    `,
  },
  {
    // Billing caps per project (NULL = unlimited) and the payment provider's account of the project, as its
    // verified webhooks last told it; customer_id finds the project of a later subscription change.
    id: '004_billing',
    sql: `
      CREATE TABLE billing (
        project_id uuid PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
        emails_limit bigint CHECK (emails_limit >= 0),
        contacts_limit bigint CHECK (contacts_limit >= 0),
        events_limit bigint CHECK (events_limit >= 0),
        provider text NOT NULL DEFAULT '',
        customer_id text NOT NULL DEFAULT '',
        subscription_id text NOT NULL DEFAULT '',
        subscription_status text NOT NULL DEFAULT '',
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX billing_customer ON billing (provider, customer_id) WHERE customer_id <> '';
    `,
  },
  {
    // A project reset or deletion and each service's step of it. No foreign key to projects: a deletion
    // removes the project row at once and its wipe rows when the last step is done. One running wipe per
    // project (partial unique index).
    id: '005_project_wipes',
    sql: `
      CREATE TABLE project_wipes (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        kind text NOT NULL CHECK (kind IN ('reset', 'delete')),
        requested_by uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz
      );
      CREATE UNIQUE INDEX project_wipes_running ON project_wipes (project_id) WHERE completed_at IS NULL;
      CREATE INDEX project_wipes_project ON project_wipes (project_id, created_at DESC);
      CREATE TABLE project_wipe_steps (
        wipe_id uuid NOT NULL REFERENCES project_wipes ON DELETE CASCADE,
        service text NOT NULL,
        phase int NOT NULL,
        started_at timestamptz,
        done_at timestamptz,
        PRIMARY KEY (wipe_id, service)
      );
    `,
  },
  {
    // Sending suspensions: at most one open (lifted_at NULL) per project; the rows are the history.
    id: '006_project_suspensions',
    sql: `
      CREATE TABLE project_suspensions (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
        metric text NOT NULL,
        rate double precision NOT NULL,
        threshold double precision NOT NULL,
        sent bigint NOT NULL,
        reason text NOT NULL,
        suspended_at timestamptz NOT NULL DEFAULT now(),
        lifted_at timestamptz,
        lifted_by uuid
      );
      CREATE UNIQUE INDEX project_suspensions_open ON project_suspensions (project_id) WHERE lifted_at IS NULL;
      CREATE INDEX project_suspensions_project ON project_suspensions (project_id, suspended_at DESC);
    `,
  },
];
