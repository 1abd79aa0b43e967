import type { Migration } from '@svc/lib/migrate';
import { wipedProjectsKindMigration, wipedProjectsMigration } from '@svc/lib/project-tombstones';

export const migrations: Migration[] = [
  {
    id: '001_contacts',
    sql: `
      CREATE TABLE contacts (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        email text NOT NULL,
        subscribed boolean NOT NULL,
        snoozed_until timestamptz,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX contacts_project_email ON contacts (project_id, lower(email));
      CREATE INDEX contacts_project_created ON contacts (project_id, created_at, id);
      CREATE INDEX contacts_data_gin ON contacts USING gin (data jsonb_path_ops);

      CREATE TABLE events (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        name text NOT NULL,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX events_contact_name_time ON events (contact_id, name, created_at);
      CREATE INDEX events_project_name_time ON events (project_id, name, created_at);
      CREATE INDEX events_project_time ON events (project_id, created_at, id);

      CREATE TABLE email_activity (
        id bigserial PRIMARY KEY,
        project_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        email_id text NOT NULL,
        type text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX email_activity_contact_type_time ON email_activity (contact_id, type, created_at);

      CREATE TABLE segment_members (
        project_id uuid NOT NULL,
        segment_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        PRIMARY KEY (segment_id, contact_id)
      );
      CREATE INDEX segment_members_contact ON segment_members (contact_id);

      -- The inferred type of each custom field, fixed at the first non-null value (SPEC.md "Type inference").
      CREATE TABLE field_types (
        project_id uuid NOT NULL,
        path text NOT NULL,
        type text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, path)
      );

      CREATE TABLE import_jobs (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        status text NOT NULL,
        filename text NOT NULL DEFAULT '',
        csv bytea,
        total_rows int NOT NULL DEFAULT 0,
        processed int NOT NULL DEFAULT 0,
        imported int NOT NULL DEFAULT 0,
        updated int NOT NULL DEFAULT 0,
        skipped int NOT NULL DEFAULT 0,
        errors jsonb NOT NULL DEFAULT '[]',
        failure text,
        created_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz
      );
      CREATE INDEX import_jobs_queued ON import_jobs (created_at) WHERE status = 'queued';

      CREATE TABLE bulk_jobs (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        operation text NOT NULL,
        status text NOT NULL,
        contact_ids uuid[] NOT NULL,
        processed int NOT NULL DEFAULT 0,
        succeeded int NOT NULL DEFAULT 0,
        not_found jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz
      );
      CREATE INDEX bulk_jobs_queued ON bulk_jobs (created_at) WHERE status = 'queued';

      -- Bus messages already applied, so redelivery changes nothing (consumers are idempotent).
      CREATE TABLE processed_messages (
        consumer text NOT NULL,
        message_id text NOT NULL,
        processed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
      );
    `,
  },
  {
    id: '002_job_leases',
    sql: `
      -- A running job holds a lease its worker renews with each progress write; a job whose lease
      -- ran out (its process died) is queued again by the next sweep, on any replica.
      ALTER TABLE import_jobs ADD COLUMN locked_until timestamptz;
      ALTER TABLE bulk_jobs ADD COLUMN locked_until timestamptz;
      CREATE INDEX import_jobs_leased ON import_jobs (locked_until) WHERE status = 'running';
      CREATE INDEX bulk_jobs_leased ON bulk_jobs (locked_until) WHERE status = 'running';
    `,
  },
  {
    id: '003_segment_definitions',
    sql: `
      -- The segments service's read model: how a segment.<id> filter reads a segment. A DYNAMIC
      -- segment by its condition (expanded at compile time), a STATIC one (condition NULL) by
      -- its rows in segment_members.
      CREATE TABLE segment_definitions (
        project_id uuid NOT NULL,
        segment_id uuid PRIMARY KEY,
        condition jsonb
      );
      CREATE INDEX segment_definitions_project ON segment_definitions (project_id);
    `,
  },
  {
    id: '004_import_csv_uncompressed',
    sql: `
      -- A queued file is read once, then cleared (csv = NULL): compressing up to 5 MB on upload cost
      -- about 60 ms of PostgreSQL CPU per import, more than the space saved for the minutes it is kept.
      ALTER TABLE import_jobs ALTER COLUMN csv SET STORAGE EXTERNAL;
    `,
  },
  // Deleted projects: their messages handled afterwards write nothing (lib/project-tombstones.ts).
  wipedProjectsMigration('005_wiped_projects'),
  // Resets too: a reset project's messages written before its wipe write nothing.
  wipedProjectsKindMigration('006_wiped_projects_kind'),
];
