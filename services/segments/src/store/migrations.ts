import type { Migration } from '@svc/lib/migrate';
import { wipedProjectsKindMigration, wipedProjectsMigration } from '@svc/lib/project-tombstones';

export const migrations: Migration[] = [
  {
    id: '001_segments',
    sql: `
      CREATE TABLE segments (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        name text NOT NULL,
        description text,
        type text NOT NULL CHECK (type IN ('DYNAMIC', 'STATIC')),
        -- The filter tree of a DYNAMIC segment (validated by the contacts service); NULL for STATIC.
        condition jsonb,
        track_membership boolean NOT NULL DEFAULT false,
        -- Fixed at creation: event names stay the same after a rename.
        slug text NOT NULL,
        member_count bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX segments_project_created ON segments (project_id, created_at DESC, id DESC);
      CREATE UNIQUE INDEX segments_project_slug ON segments (project_id, slug);
      -- Incremental tracking reads the tracked segments of one project per bus message.
      CREATE INDEX segments_tracked ON segments (project_id) WHERE track_membership AND type = 'DYNAMIC';

      -- Stored membership of tracked segments: entry/exit events are the changes to these rows.
      CREATE TABLE memberships (
        segment_id uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL,
        entered_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (segment_id, contact_id)
      );
      CREATE INDEX memberships_contact ON memberships (contact_id);
    `,
  },
  {
    id: '002_tracked_notify',
    sql: `
      -- Whether a project tracks any segment is cached by each segments process (lib/notified-cache.ts):
      -- a segment created, deleted or with its tracking or type changed tells them to forget it.
      CREATE FUNCTION segments_tracking_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('segments_tracking_changed', '');
        RETURN NULL;
      END $$;
      CREATE TRIGGER segments_tracking_changed
        AFTER INSERT OR UPDATE OF track_membership, type, project_id OR DELETE OR TRUNCATE ON segments
        FOR EACH STATEMENT EXECUTE FUNCTION segments_tracking_changed();
    `,
  },
  // Deleted projects: their messages handled afterwards write nothing (lib/project-tombstones.ts).
  wipedProjectsMigration('003_wiped_projects'),
  // Resets too: a reset project's messages written before its wipe write nothing.
  wipedProjectsKindMigration('004_wiped_projects_kind'),
];
