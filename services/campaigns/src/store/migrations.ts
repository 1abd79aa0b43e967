import type { Migration } from '@svc/lib/migrate';
import { wipedProjectsKindMigration, wipedProjectsMigration } from '@svc/lib/project-tombstones';

export const migrations: Migration[] = [
  {
    id: '001_campaigns',
    sql: `
      CREATE TABLE campaigns (
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
        status text NOT NULL DEFAULT 'DRAFT'
          CHECK (status IN ('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED')),
        audience_type text NOT NULL CHECK (audience_type IN ('ALL', 'SEGMENT', 'FILTERED')),
        segment_id uuid,
        -- The filter tree of a FILTERED audience (validated by the contacts service).
        audience_condition jsonb,
        scheduled_for timestamptz,
        total_recipients bigint NOT NULL DEFAULT 0,
        sent_count bigint NOT NULL DEFAULT 0,
        delivered_count bigint NOT NULL DEFAULT 0,
        opened_count bigint NOT NULL DEFAULT 0,
        clicked_count bigint NOT NULL DEFAULT 0,
        bounced_count bigint NOT NULL DEFAULT 0,
        sent_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),

        -- Fan-out checkpoint (listmonk style): when the scheduler looks next, who holds the campaign
        -- (a lease that expires if its worker dies), and how far the audience snapshot got.
        run_at timestamptz,
        lease_until timestamptz,
        lease_token uuid,
        snapshot_after uuid,
        snapshot_done boolean NOT NULL DEFAULT false,
        last_error text
      );
      CREATE INDEX campaigns_project_created ON campaigns (project_id, created_at DESC, id DESC);
      -- The scheduler's claim walks due campaigns only (SCHEDULED at their time, SENDING at once).
      CREATE INDEX campaigns_due ON campaigns (run_at) WHERE status IN ('SCHEDULED', 'SENDING');
      CREATE INDEX campaigns_segment ON campaigns (project_id, segment_id) WHERE segment_id IS NOT NULL;

      -- The audience snapshot: one row per (campaign, contact), so a recipient is queued at most
      -- once whatever crashes and restarts happen; the lifecycle flags make counters unique per recipient.
      CREATE TABLE campaign_recipients (
        campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL,
        email text NOT NULL,
        subscribed boolean NOT NULL,
        -- The contact's data when the snapshot was taken: the Liquid variables of its message.
        variables jsonb NOT NULL DEFAULT '{}',
        handed_over_at timestamptz,
        email_id uuid,
        -- queued, suppressed or failed (messaging's answer; a duplicate counts as queued).
        queue_status text,
        error text,
        sent_at timestamptz,
        delivered_at timestamptz,
        opened_at timestamptz,
        clicked_at timestamptz,
        bounced_at timestamptz,
        complained_at timestamptz,
        PRIMARY KEY (campaign_id, contact_id)
      );
      -- The next hand-over batch: recipients not handed over yet, in contact id order.
      CREATE INDEX campaign_recipients_pending ON campaign_recipients (campaign_id, contact_id)
        WHERE handed_over_at IS NULL;
      -- The send window: queued recipients whose delivery attempt has not ended yet.
      CREATE INDEX campaign_recipients_in_flight ON campaign_recipients (campaign_id)
        WHERE queue_status = 'queued' AND sent_at IS NULL AND bounced_at IS NULL;
    `,
  },
  {
    // The hand-over recorded per batch: one checkpoint write per QueueEmails round instead of one row update per
    // recipient. Additive: a release without it keeps writing handed_over_at per row, which this one reads too.
    id: '002_campaign_handover_checkpoint',
    sql: `
      ALTER TABLE campaigns
        -- Every recipient whose contact id is at most this one was handed over (recipients not queued, and any
        -- handed over by a release without the checkpoint, have handed_over_at and queue_status on their row).
        ADD COLUMN handover_after uuid,
        -- Recipients handed over by the checkpoint that messaging queued (or had queued: duplicate), and of those,
        -- how many messaging withdrew: with sent_count and bounced_count, the send window of the checkpoint.
        ADD COLUMN handover_queued bigint NOT NULL DEFAULT 0,
        ADD COLUMN handover_withdrawn bigint NOT NULL DEFAULT 0;
    `,
  },
  // Deleted projects: their messages handled afterwards write nothing (lib/project-tombstones.ts).
  wipedProjectsMigration('003_wiped_projects'),
  // Resets too: a reset project's messages written before its wipe write nothing.
  wipedProjectsKindMigration('004_wiped_projects_kind'),
];
