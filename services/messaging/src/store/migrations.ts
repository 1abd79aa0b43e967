import type { Migration } from '@svc/lib/migrate';
import { wipedProjectsKindMigration, wipedProjectsMigration } from '@svc/lib/project-tombstones';

export const migrations: Migration[] = [
  {
    id: '001_messaging',
    sql: `
      -- Service-wide secrets (the tracking-token key), created once and shared by every replica.
      CREATE TABLE settings (
        key text PRIMARY KEY,
        value text NOT NULL
      );

      CREATE TABLE domains (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        domain text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified')),
        verification_token text NOT NULL,
        dkim_selector text NOT NULL,
        dkim_private_key text NOT NULL,
        dkim_public_key text NOT NULL,
        -- purpose -> whether the record was found at the last check
        record_status jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        verified_at timestamptz,
        last_checked_at timestamptz
      );
      CREATE UNIQUE INDEX domains_project_domain ON domains (project_id, domain);
      CREATE INDEX domains_due_check ON domains (last_checked_at NULLS FIRST);

      CREATE TABLE templates (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        subject text NOT NULL,
        body text NOT NULL,
        from_email text NOT NULL,
        from_name text NOT NULL DEFAULT '',
        reply_to text NOT NULL DEFAULT '',
        type text NOT NULL CHECK (type IN ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX templates_project_created ON templates (project_id, created_at DESC);

      -- One row per recipient message; also the durable send queue (status 'queued').
      CREATE TABLE emails (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        to_email text NOT NULL,
        to_name text NOT NULL DEFAULT '',
        from_email text NOT NULL,
        from_name text NOT NULL DEFAULT '',
        reply_to text NOT NULL DEFAULT '',
        subject text NOT NULL,
        html text NOT NULL,
        text text NOT NULL,
        headers jsonb NOT NULL DEFAULT '{}',
        attachments jsonb NOT NULL DEFAULT '[]',
        template_id uuid,
        type text NOT NULL,
        message_id text NOT NULL,
        status text NOT NULL CHECK (status IN (
          'queued', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'suppressed', 'failed')),
        attempts int NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        locked_until timestamptz,
        last_error text,
        sent_at timestamptz,
        delivered_at timestamptz,
        first_opened_at timestamptz,
        first_clicked_at timestamptz,
        open_count int NOT NULL DEFAULT 0,
        click_count int NOT NULL DEFAULT 0,
        bounced_at timestamptz,
        complained_at timestamptz,
        bounce_reason text,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX emails_due ON emails (next_attempt_at) WHERE status = 'queued';
      CREATE INDEX emails_leased ON emails (locked_until) WHERE status = 'sending';
      CREATE INDEX emails_project_created ON emails (project_id, created_at DESC);
      CREATE INDEX emails_message_id ON emails (message_id);

      -- Addresses that hard-bounced or complained receive nothing more from the project.
      CREATE TABLE suppressions (
        project_id uuid NOT NULL,
        email text NOT NULL,
        reason text NOT NULL,
        email_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, email)
      );

      -- Activity read model, fed from the bus; source_id (the bus message id) makes it idempotent.
      CREATE TABLE activity (
        id uuid PRIMARY KEY,
        source_id text NOT NULL UNIQUE,
        project_id uuid NOT NULL,
        type text NOT NULL,
        contact_id uuid,
        email_id uuid,
        email text,
        name text,
        data jsonb NOT NULL DEFAULT '{}',
        occurred_at timestamptz NOT NULL
      );
      CREATE INDEX activity_feed ON activity (project_id, occurred_at DESC, id DESC);
      CREATE INDEX activity_by_type ON activity (project_id, type, occurred_at DESC);
    `,
  },
  {
    id: '002_send_idempotency',
    sql: `
      -- Idempotency-Key of /v1/send, written with the queued emails (IDEMPOTENCY_TTL_SECONDS, then removed).
      CREATE TABLE send_idempotency (
        project_id uuid NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        answer jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, key)
      );
      CREATE INDEX send_idempotency_created ON send_idempotency (created_at);
    `,
  },
  {
    id: '003_email_priority',
    sql: `
      -- Mail is claimed by source: transactional (0) before workflow (1) before campaign (2), so a large
      -- campaign backlog never delays a password reset. The claim reads this index in (priority, due) order.
      ALTER TABLE emails ADD COLUMN priority smallint NOT NULL DEFAULT 0;
      DROP INDEX emails_due;
      CREATE INDEX emails_due ON emails (priority, next_attempt_at) WHERE status = 'queued';
    `,
  },
  {
    id: '004_send_batches',
    sql: `
      -- Attachments of one send (a /v1/send request or a QueueEmails batch), stored once however many
      -- recipients it has; every email of the send references it by send_id and the delivery worker reads
      -- them by that id. Rows queued before this migration keep theirs in emails.attachments.
      CREATE TABLE send_attachments (
        send_id uuid NOT NULL,
        position smallint NOT NULL,
        filename text NOT NULL,
        content bytea NOT NULL,
        content_type text NOT NULL,
        content_id text,
        disposition text NOT NULL,
        PRIMARY KEY (send_id, position)
      );
      -- campaign_id / workflow_id: which campaign or workflow queued the email, for their statistics.
      ALTER TABLE emails ADD COLUMN send_id uuid, ADD COLUMN campaign_id uuid, ADD COLUMN workflow_id uuid;
      CREATE INDEX emails_campaign ON emails (campaign_id) WHERE campaign_id IS NOT NULL;
      CREATE INDEX emails_workflow ON emails (workflow_id) WHERE workflow_id IS NOT NULL;
    `,
  },
  {
    id: '005_email_dedupe_test',
    sql: `
      -- dedupe_key: the caller's key for one recipient's email (campaign:<id>:<contact>, workflow:<execution>:<step>);
      -- a project queues at most one email per key, so a retried or resumed batch never mails twice.
      -- test: a test message, left out of campaign and workflow statistics and analytics.
      ALTER TABLE emails ADD COLUMN dedupe_key text, ADD COLUMN test boolean NOT NULL DEFAULT false;
      CREATE UNIQUE INDEX emails_dedupe ON emails (project_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
    `,
  },
  {
    id: '006_email_timeseries',
    sql: `
      -- GET /analytics/timeseries reads each lifecycle step of a project's emails by the time it happened, one
      -- range scan per step. Partial: rows enter an index only once the step happened, so queueing costs nothing
      -- more, and test messages (counted nowhere) never enter.
      CREATE INDEX emails_project_sent ON emails (project_id, sent_at) WHERE sent_at IS NOT NULL AND NOT test;
      CREATE INDEX emails_project_delivered ON emails (project_id, delivered_at)
        WHERE delivered_at IS NOT NULL AND NOT test;
      CREATE INDEX emails_project_opened ON emails (project_id, first_opened_at)
        WHERE first_opened_at IS NOT NULL AND NOT test;
      CREATE INDEX emails_project_clicked ON emails (project_id, first_clicked_at)
        WHERE first_clicked_at IS NOT NULL AND NOT test;
      CREATE INDEX emails_project_bounced ON emails (project_id, bounced_at) WHERE bounced_at IS NOT NULL AND NOT test;
    `,
  },
  {
    id: '007_dev_mail',
    sql: `
      -- Embedded mode's local SMTP sink keeps what it receives here (GET /dev/mail), so the mail viewer
      -- survives restarts. project_id comes from the email row the message's X-Email-Id names; mail that
      -- names none has no project and is shown to no one.
      CREATE TABLE dev_mail (
        id uuid PRIMARY KEY,
        email_id uuid,
        project_id uuid,
        mail_from text NOT NULL,
        rcpt_to text[] NOT NULL,
        raw bytea NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX dev_mail_project ON dev_mail (project_id, received_at DESC);
    `,
  },
  {
    id: '008_email_attempts',
    sql: `
      -- One row per delivery attempt with the SMTP server's answer (GET /emails/{id}), written with the outcome.
      CREATE TABLE email_attempts (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        email_id uuid NOT NULL,
        attempt int NOT NULL,
        outcome text NOT NULL CHECK (outcome IN ('sent', 'retry', 'bounced', 'failed')),
        smtp_code int,
        smtp_response text NOT NULL DEFAULT '',
        at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX email_attempts_email ON email_attempts (email_id, id);
      -- GET /emails: a project's messages newest first, filtered by contact, template or campaign (keyset on
      -- (created_at, id)); emails_project_created covers the unfiltered list and the status and date filters.
      CREATE INDEX emails_project_contact ON emails (project_id, contact_id, created_at DESC);
      CREATE INDEX emails_project_template ON emails (project_id, template_id, created_at DESC)
        WHERE template_id IS NOT NULL;
    `,
  },
  {
    id: '009_uploads',
    sql: `
      -- POST /uploads/image: images for templates, served publicly at GET /u/{id} (the id is the secret).
      CREATE TABLE uploads (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        content_type text NOT NULL,
        bytes bytea NOT NULL,
        size int NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX uploads_project ON uploads (project_id, created_at DESC);
    `,
  },
  {
    // Uploads kept in an S3-compatible bucket when S3_BUCKET is set: the row keeps the type and size, the bytes
    // live under `uploads/<id>` in the bucket.
    id: '010_upload_storage',
    sql: `
      ALTER TABLE uploads ALTER COLUMN bytes DROP NOT NULL;
      ALTER TABLE uploads ADD COLUMN storage text NOT NULL DEFAULT 'database' CHECK (storage IN ('database', 's3'));
    `,
  },
  {
    // No statement reads emails by workflow_id, and every workflow email's insert and status change wrote an entry
    // in this index.
    id: '011_drop_emails_workflow_index',
    sql: 'DROP INDEX emails_workflow;',
  },
  {
    // A Message-ID we set names its email's id (`<id@sender domain>`): a provider's notification finds the row by
    // primary key. Every email's insert and status change wrote an entry in this index.
    id: '012_drop_emails_message_id_index',
    sql: 'DROP INDEX emails_message_id;',
  },
  {
    // recordOutcomes' statement for sent mail of locked rows (the delivery batch's write of every email) as a generic
    // plan kept per session, instead of parsed and planned for every batch. Its shape is fixed as
    // DELIVERY_PLAN_SETTINGS fixes the statement's (whatever the statistics were when the plan was made): each row
    // reached by primary key through a nested loop over the batch. Each email's attempt is written with its outcome;
    // the reply code leads the server's answer ("250 ...").
    id: '013_record_sent_function',
    sql: `
      CREATE FUNCTION record_sent_emails(ids uuid[], answers text[]) RETURNS void
        LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
        SET enable_hashjoin = off SET enable_mergejoin = off
      AS $$
      BEGIN
        WITH updated AS (
          UPDATE emails e SET attempts = e.attempts + 1, status = 'sent', sent_at = now(), locked_until = NULL,
            last_error = NULL
          FROM unnest(ids, answers) AS d(id, answer) WHERE e.id = d.id
          RETURNING e.id, e.attempts, d.answer)
        INSERT INTO email_attempts (email_id, attempt, outcome, smtp_code, smtp_response)
        SELECT u.id, u.attempts, 'sent',
          substring(u.answer FROM '^(?:gave up after \\d+ attempts: )?([2-5]\\d\\d)[ -]')::int, coalesce(u.answer, '')
        FROM updated u;
      END $$;
    `,
  },
  {
    // The chain depth of the workflow execution that queued the email (QueueRecipient.workflow_depth), carried by
    // its lifecycle messages: workflows refuse a chain of workflow-triggered-by-workflow-mail beyond its limit.
    // Null for other mail and depth 0; a column without a default is added without rewriting the table.
    id: '014_emails_workflow_depth',
    sql: 'ALTER TABLE emails ADD COLUMN workflow_depth smallint;',
  },
  // Deleted projects: their messages handled afterwards write nothing (lib/project-tombstones.ts).
  wipedProjectsMigration('015_wiped_projects'),
  // Resets too: a reset project's messages written before its wipe write nothing.
  wipedProjectsKindMigration('016_wiped_projects_kind'),
];
