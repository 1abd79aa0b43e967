import type { Migration } from '@svc/lib/migrate';
import { wipedProjectsKindMigration, wipedProjectsMigration } from '@svc/lib/project-tombstones';

export const migrations: Migration[] = [
  {
    id: '001_workflows',
    sql: `
      CREATE TABLE workflows (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        name text NOT NULL,
        description text,
        trigger_type text NOT NULL CHECK (trigger_type IN ('EVENT', 'MANUAL')),
        trigger_config jsonb NOT NULL DEFAULT '{}',
        enabled boolean NOT NULL DEFAULT false,
        allow_reentry boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX workflows_project_created ON workflows (project_id, created_at DESC, id DESC);
      -- Each events.tracked message looks up the enabled workflows its event name triggers.
      CREATE INDEX workflows_trigger ON workflows (project_id, (trigger_config->>'eventName'))
        WHERE enabled AND trigger_type = 'EVENT';

      CREATE TABLE workflow_steps (
        id uuid PRIMARY KEY,
        workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
        type text NOT NULL,
        name text NOT NULL,
        config jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX workflow_steps_workflow ON workflow_steps (workflow_id, created_at);

      CREATE TABLE workflow_transitions (
        id uuid PRIMARY KEY,
        workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
        from_step_id uuid NOT NULL REFERENCES workflow_steps (id) ON DELETE CASCADE,
        to_step_id uuid NOT NULL REFERENCES workflow_steps (id) ON DELETE CASCADE,
        branch text CHECK (branch IN ('yes', 'no')),
        wait_outcome text CHECK (wait_outcome IN ('EVENT', 'TIMEOUT')),
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX workflow_transitions_workflow ON workflow_transitions (workflow_id, created_at);

      -- One row per enrolment: its status, where it is, and (due_at) when a worker must look at it
      -- next. due_at doubles as the lease of a claimed row: a worker that dies leaves it due again.
      CREATE TABLE executions (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL,
        workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL,
        status text NOT NULL CHECK (status IN ('RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED')),
        context jsonb NOT NULL DEFAULT '{}',
        -- The triggering message (tracked event id): one execution per message per workflow.
        trigger_key text,
        current_step_id uuid,
        current_history_id uuid,
        -- Set by a matching event while the execution waits in a WAIT_FOR_EVENT step.
        resume text,
        wait_event text,
        waiting_since timestamptz,
        due_at timestamptz,
        lease_token uuid,
        error text,
        started_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX executions_trigger ON executions (workflow_id, trigger_key) WHERE trigger_key IS NOT NULL;
      -- Workers claim by due time: only unfinished executions carry one, so the index holds just those.
      CREATE INDEX executions_due ON executions (due_at) WHERE due_at IS NOT NULL;
      -- A tracked event finds the executions of its contact waiting for it.
      CREATE INDEX executions_waiting ON executions (project_id, contact_id, wait_event) WHERE wait_event IS NOT NULL;
      CREATE INDEX executions_workflow ON executions (workflow_id, started_at DESC, id DESC);
      CREATE INDEX executions_contact ON executions (workflow_id, contact_id, status);

      CREATE TABLE execution_steps (
        id uuid PRIMARY KEY,
        execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
        step_id uuid NOT NULL,
        step_type text NOT NULL,
        -- How many times this execution has reached this step (loops through a DELAY).
        visit int NOT NULL DEFAULT 1,
        status text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        output jsonb,
        error text
      );
      CREATE INDEX execution_steps_execution ON execution_steps (execution_id, started_at, id);

      -- Signs WEBHOOK step requests (HMAC-SHA256), created on first use.
      CREATE TABLE project_secrets (
        project_id uuid PRIMARY KEY,
        webhook_secret text NOT NULL
      );

      -- Data fields seen on the trigger events of workflows, for GET /workflows/fields.
      CREATE TABLE event_fields (
        project_id uuid NOT NULL,
        event_name text NOT NULL,
        field text NOT NULL,
        type text NOT NULL,
        PRIMARY KEY (project_id, event_name, field)
      );
    `,
  },
  {
    id: '002_awaited_events',
    sql: `
      -- Recent events of names some WAIT_FOR_EVENT step awaits: an execution entering the wait looks
      -- here for one tracked since the step began (it may have come before the wait row was written).
      CREATE TABLE awaited_events (
        project_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        name text NOT NULL,
        at timestamptz NOT NULL,
        data jsonb NOT NULL DEFAULT '{}',
        received_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX awaited_events_contact ON awaited_events (project_id, contact_id, name, at);
      CREATE INDEX awaited_events_received ON awaited_events (received_at);
      -- When the execution last set off without waiting (its trigger event, a manual start, the end of a
      -- DELAY or wait): a WAIT_FOR_EVENT reached from there takes the awaited events tracked since.
      ALTER TABLE executions ADD COLUMN since timestamptz;
      -- GET /activity/upcoming: a project's waiting executions by due time.
      CREATE INDEX executions_upcoming ON executions (project_id, due_at) WHERE status = 'WAITING';
      CREATE INDEX workflow_steps_awaits ON workflow_steps ((config->>'eventName')) WHERE type = 'WAIT_FOR_EVENT';
    `,
  },
  {
    id: '003_changes_notify',
    sql: `
      -- Each workflows process caches which events a project's workflows start on or await, and the
      -- graphs it runs (lib/notified-cache.ts): any change to a workflow, step or transition tells them
      -- to forget (edits are rare; executions never write these tables).
      CREATE FUNCTION workflows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('workflows_changed', '');
        RETURN NULL;
      END $$;
      CREATE TRIGGER workflows_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON workflows
        FOR EACH STATEMENT EXECUTE FUNCTION workflows_changed();
      CREATE TRIGGER workflow_steps_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON workflow_steps
        FOR EACH STATEMENT EXECUTE FUNCTION workflows_changed();
      CREATE TRIGGER workflow_transitions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON workflow_transitions
        FOR EACH STATEMENT EXECUTE FUNCTION workflows_changed();
    `,
  },
  {
    id: '004_enrol_triggered',
    sql: `
      -- Enrolment of a batch of tracked events in one round trip (ExecutionsStore.enrolTriggered). Each wave
      -- (events of distinct contacts) takes its locks in one statement, then inserts in a second one: a
      -- VOLATILE function's statements each take a new snapshot, so the insert sees every execution committed
      -- before its locks were granted, and a later wave sees the earlier waves' rows.
      CREATE FUNCTION enrol_triggered(events jsonb) RETURNS SETOF executions LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        round int;
        last int;
        n int := 0;
        added int;
      BEGIN
        SELECT max((e->>'wave')::int) INTO last FROM jsonb_array_elements(events) e;
        FOR round IN 0..coalesce(last, -1) LOOP
          -- Not beside a structural edit (FOR SHARE of the workflow), and the per-(workflow, contact) lock of
          -- a manual start (ExecutionsStore.enrol), taken in one order.
          PERFORM count(*) FROM (
            SELECT pg_advisory_xact_lock(hashtextextended(w.id::text || ':' || e.contact_id, 0))
            FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id text, wave int)
            JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
              AND w.trigger_config->>'eventName' = e.event_name
            JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
            WHERE e.wave = round
            ORDER BY w.id, e.contact_id
            FOR SHARE OF w
          ) locked;
          RETURN QUERY
          INSERT INTO executions
            (id, project_id, workflow_id, contact_id, status, context, trigger_key, current_step_id, due_at, since)
          SELECT enrol_uuidv7(), e.project_id, w.id, e.contact_id, 'RUNNING', e.context, e.trigger_key, s.id, now(),
            e.since
          FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id uuid, context jsonb,
            trigger_key text, since timestamptz, wave int)
          JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
            AND w.trigger_config->>'eventName' = e.event_name
          JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
          WHERE e.wave = round AND NOT EXISTS (
            SELECT 1 FROM executions x WHERE x.workflow_id = w.id AND x.contact_id = e.contact_id
              AND (NOT w.allow_reentry OR x.status IN ('RUNNING', 'WAITING'))
          )
          ON CONFLICT (workflow_id, trigger_key) WHERE trigger_key IS NOT NULL DO NOTHING
          RETURNING *;
          GET DIAGNOSTICS added = ROW_COUNT;
          n := n + added;
        END LOOP;
        IF n > 0 THEN PERFORM pg_notify('workflow_executions_due', ''); END IF;
      END $$;
      -- A UUIDv7 (RFC 9562): the time in milliseconds, then random bits (the ids the service mints elsewhere).
      CREATE FUNCTION enrol_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
        SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
          substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
          52, 1), 53, 1), 'hex')::uuid
      $$;
    `,
  },
  {
    id: '005_enrol_custom_plans',
    sql: `
      -- plpgsql caches its statements' plans, and after five calls a session may keep a generic plan for
      -- enrol_triggered's lock and insert statements: planned without the batch, it cost 3.5-3.9 ms of
      -- PostgreSQL CPU per tracked execution at 10,000 enrolments (0.8 ms with plans made for each batch).
      ALTER FUNCTION enrol_triggered(jsonb) SET plan_cache_mode = force_custom_plan;
    `,
  },
  {
    id: '006_finish_steps_generic',
    sql: `
      -- ExecutionsStore.finishSteps' statement, kept as one generic plan per session instead of planned for every
      -- batch (about 12% of its PostgreSQL CPU, bench/workflow-sql.ts). A generic plan made while the tables were
      -- small must not keep scanning them once they have grown (what migration 005 avoids for enrolment), so its
      -- shape is fixed: without sequential scans, hash or merge joins, each table is reached only through an index
      -- on what the batch names (executions and execution_steps by primary key, the visit counts by
      -- execution_steps_execution), whatever the statistics were when it was planned. The batch's own rows
      -- (the jsonb items, the CTEs) are joined by nested loops over at most one claim.
      CREATE FUNCTION finish_steps(items jsonb)
        RETURNS TABLE (id uuid, status text, current_step_id uuid, current_history_id uuid, resume text,
          wait_event text, waiting_since timestamptz, since timestamptz, due_at timestamptz, lease_token uuid,
          error text, finished_at timestamptz, updated_at timestamptz, context jsonb, open_visit int,
          open_started_at timestamptz)
        LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off
        SET enable_mergejoin = off
      AS $$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH x AS (
          SELECT * FROM jsonb_to_recordset(items) AS x(id uuid, lease uuid, status text, set_step boolean,
            next_step uuid, due_at timestamptz, wait_event text, patch jsonb, error text, finished boolean,
            history_id uuid, fresh_id uuid, step_id uuid, step_type text, started_at timestamptz, h_status text,
            output jsonb, h_error text, chain jsonb, last_id uuid, last_step uuid, open_id uuid, open_step uuid,
            open_type text)
        ), upd AS (
          UPDATE executions e SET
            status = x.status,
            current_step_id = CASE WHEN x.set_step THEN x.next_step ELSE COALESCE(x.last_step, e.current_step_id) END,
            current_history_id = CASE WHEN x.set_step THEN x.open_id
              ELSE COALESCE(x.last_id, x.fresh_id, e.current_history_id) END,
            due_at = x.due_at,
            wait_event = x.wait_event,
            -- A wait for an event takes the events since the execution last set off (see resumeFromRecorded).
            waiting_since = CASE WHEN x.wait_event IS NULL THEN NULL
              WHEN e.status = 'WAITING' THEN now() ELSE COALESCE(e.since, now()) END,
            since = CASE WHEN e.status = 'WAITING' AND x.status <> 'WAITING' THEN now() ELSE e.since END,
            resume = NULL,
            context = e.context || x.patch,
            error = COALESCE(x.error, e.error),
            finished_at = CASE WHEN x.finished THEN now() END,
            lease_token = CASE WHEN x.finished THEN NULL ELSE e.lease_token END,
            updated_at = now()
          FROM x
          WHERE e.id = x.id AND e.lease_token = x.lease
          -- What a step can change (the rest is the caller's row): less to send and parse per step.
          RETURNING e.id, e.status, e.current_step_id, e.current_history_id, e.resume, e.wait_event, e.waiting_since,
            e.since, e.due_at, e.lease_token, e.error, e.finished_at, e.updated_at,
            CASE WHEN x.patch = '{}'::jsonb THEN NULL ELSE e.context END AS context
        ), fresh AS (
          -- Steps without effects outside this database: their history row is written here, not by beginSteps.
          INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit, started_at, output, error,
            finished_at)
          SELECT x.fresh_id, x.id, x.step_id, x.step_type, x.h_status,
            (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = x.id AND s.step_id = x.step_id),
            x.started_at, x.output, x.h_error, CASE WHEN x.h_status = 'WAITING' THEN NULL ELSE now() END
          FROM x JOIN upd ON upd.id = x.id
          WHERE x.fresh_id IS NOT NULL
        ), opened AS (
          UPDATE execution_steps s SET status = x.h_status, output = x.output, error = x.h_error,
            finished_at = CASE WHEN x.h_status = 'WAITING' THEN NULL ELSE now() END
          FROM x JOIN upd ON upd.id = x.id
          WHERE x.fresh_id IS NULL AND s.id = x.history_id
        ), chained AS (
          -- The steps chained after the first in the same round (distinct steps: none is visited twice).
          INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit, started_at, output, error,
            finished_at)
          SELECT c.id, x.id, c.step_id, c.step_type, c.status,
            (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = x.id AND s.step_id = c.step_id),
            c.started_at, c.output, c.error, now()
          FROM x JOIN upd ON upd.id = x.id
            CROSS JOIN jsonb_to_recordset(x.chain) AS c (id uuid, step_id uuid, step_type text, started_at timestamptz,
              status text, output jsonb, error text)
        ), begun AS (
          -- The next step's history row, opened as beginSteps would (its visit number keys the step's effect).
          INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit)
          SELECT x.open_id, x.id, x.open_step, x.open_type, 'RUNNING',
            (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = x.id AND s.step_id = x.open_step)
          FROM x JOIN upd ON upd.id = x.id
          WHERE x.open_id IS NOT NULL AND x.set_step
          RETURNING execution_id, visit, started_at
        )
        SELECT upd.*, begun.visit AS open_visit, begun.started_at AS open_started_at
        FROM upd LEFT JOIN begun ON begun.execution_id = upd.id;
      END $$;
    `,
  },
  {
    id: '007_claim_due_generic',
    sql: `
      -- ExecutionsStore.claim as a generic plan kept per session (about 20% of its PostgreSQL CPU at claims of 10,
      -- bench/workflow-sql.ts), of a fixed shape as finish_steps (006): without sequential or bitmap scans, sorts,
      -- hash or merge joins, the due rows can only be read from executions_due in order, up to the limit, and the
      -- claimed rows updated through the primary key, however many were due when the plan was made.
      CREATE FUNCTION claim_due(lim int, lease_ms double precision) RETURNS SETOF executions
        LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
        SET enable_sort = off SET enable_hashjoin = off SET enable_mergejoin = off
      AS $$
      BEGIN
        RETURN QUERY
        UPDATE executions e SET due_at = now() + lease_ms * interval '1 millisecond', lease_token = gen_random_uuid()
        FROM (
          SELECT id FROM executions WHERE due_at <= now() ORDER BY due_at LIMIT lim FOR UPDATE SKIP LOCKED
        ) due
        WHERE e.id = due.id
        RETURNING e.*;
      END $$;
    `,
  },
  {
    id: '008_finish_steps_v2',
    sql: `
      -- finish_steps (006) joined the batch's items with the executions it updated in each later CTE (x JOIN upd):
      -- as nested loops, every item against every updated row (1,560 rows removed per CTE at 40 items). Here the
      -- UPDATE returns the items' columns with each updated row, so the history writes read the updated rows alone.
      -- An item with first_visit (an execution still on its TRIGGER, which nothing leads into, so it has no history
      -- row yet) writes visit 1 without counting. Bitmap scans are off too: each lookup names one key. A new
      -- function beside finish_steps, which the previous release still calls.
      CREATE FUNCTION finish_steps_v2(items jsonb)
        RETURNS TABLE (id uuid, status text, current_step_id uuid, current_history_id uuid, resume text,
          wait_event text, waiting_since timestamptz, since timestamptz, due_at timestamptz, lease_token uuid,
          error text, finished_at timestamptz, updated_at timestamptz, context jsonb, open_visit int,
          open_started_at timestamptz)
        LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
        SET enable_hashjoin = off SET enable_mergejoin = off
      AS $$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH upd AS (
          UPDATE executions e SET
            status = x.status,
            current_step_id = CASE WHEN x.set_step THEN x.next_step ELSE COALESCE(x.last_step, e.current_step_id) END,
            current_history_id = CASE WHEN x.set_step THEN x.open_id
              ELSE COALESCE(x.last_id, x.fresh_id, e.current_history_id) END,
            due_at = x.due_at,
            wait_event = x.wait_event,
            waiting_since = CASE WHEN x.wait_event IS NULL THEN NULL
              WHEN e.status = 'WAITING' THEN now() ELSE COALESCE(e.since, now()) END,
            since = CASE WHEN e.status = 'WAITING' AND x.status <> 'WAITING' THEN now() ELSE e.since END,
            resume = NULL,
            context = e.context || x.patch,
            error = COALESCE(x.error, e.error),
            finished_at = CASE WHEN x.finished THEN now() END,
            lease_token = CASE WHEN x.finished THEN NULL ELSE e.lease_token END,
            updated_at = now()
          FROM jsonb_to_recordset(items) AS x(id uuid, lease uuid, status text, set_step boolean,
            next_step uuid, due_at timestamptz, wait_event text, patch jsonb, error text, finished boolean,
            history_id uuid, fresh_id uuid, step_id uuid, step_type text, started_at timestamptz, h_status text,
            output jsonb, h_error text, chain jsonb, last_id uuid, last_step uuid, open_id uuid, open_step uuid,
            open_type text, first_visit boolean)
          WHERE e.id = x.id AND e.lease_token = x.lease
          RETURNING e.id, e.status, e.current_step_id, e.current_history_id, e.resume, e.wait_event, e.waiting_since,
            e.since, e.due_at, e.lease_token, e.error, e.finished_at, e.updated_at,
            CASE WHEN x.patch = '{}'::jsonb THEN NULL ELSE e.context END AS context,
            x.history_id AS x_history_id, x.fresh_id AS x_fresh_id, x.step_id AS x_step_id,
            x.step_type AS x_step_type, x.started_at AS x_started_at, x.h_status AS x_h_status,
            x.output AS x_output, x.h_error AS x_h_error, x.chain AS x_chain, x.open_id AS x_open_id,
            x.open_step AS x_open_step, x.open_type AS x_open_type, x.set_step AS x_set_step,
            COALESCE(x.first_visit, false) AS x_first_visit
        ), fresh AS (
          INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit, started_at, output, error,
            finished_at)
          SELECT u.x_fresh_id, u.id, u.x_step_id, u.x_step_type, u.x_h_status,
            CASE WHEN u.x_first_visit THEN 1 ELSE
              (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = u.id AND s.step_id = u.x_step_id) END,
            u.x_started_at, u.x_output, u.x_h_error, CASE WHEN u.x_h_status = 'WAITING' THEN NULL ELSE now() END
          FROM upd u
          WHERE u.x_fresh_id IS NOT NULL
        ), opened AS (
          UPDATE execution_steps s SET status = u.x_h_status, output = u.x_output, error = u.x_h_error,
            finished_at = CASE WHEN u.x_h_status = 'WAITING' THEN NULL ELSE now() END
          FROM upd u
          WHERE u.x_fresh_id IS NULL AND s.id = u.x_history_id
        ), chained AS (
          INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit, started_at, output, error,
            finished_at)
          SELECT c.id, u.id, c.step_id, c.step_type, c.status,
            CASE WHEN u.x_first_visit THEN 1 ELSE
              (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = u.id AND s.step_id = c.step_id) END,
            c.started_at, c.output, c.error, now()
          FROM upd u
            CROSS JOIN jsonb_to_recordset(u.x_chain) AS c (id uuid, step_id uuid, step_type text,
              started_at timestamptz, status text, output jsonb, error text)
        ), begun AS (
          INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit)
          SELECT u.x_open_id, u.id, u.x_open_step, u.x_open_type, 'RUNNING',
            (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = u.id AND s.step_id = u.x_open_step)
          FROM upd u
          WHERE u.x_open_id IS NOT NULL AND u.x_set_step
          RETURNING execution_id, visit, started_at
        )
        SELECT u.id, u.status, u.current_step_id, u.current_history_id, u.resume, u.wait_event, u.waiting_since,
          u.since, u.due_at, u.lease_token, u.error, u.finished_at, u.updated_at, u.context,
          begun.visit AS open_visit, begun.started_at AS open_started_at
        FROM upd u LEFT JOIN begun ON begun.execution_id = u.id;
      END $$;
    `,
  },
  {
    id: '009_enrol_triggered_v2',
    sql: `
      -- enrol_triggered (004) with its statements planned once per session instead of for every batch (005 made them
      -- custom plans: a generic plan then read whole tables once they had grown). Its shape is fixed as
      -- finish_steps' (006): without sequential or bitmap scans, hash or merge joins, each event reaches the
      -- workflows, their TRIGGER step and the contact's executions through an index, whatever the statistics.
      CREATE FUNCTION enrol_triggered_v2(events jsonb) RETURNS SETOF executions LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
        SET enable_hashjoin = off SET enable_mergejoin = off
      AS $$
      DECLARE
        round int;
        last int;
        n int := 0;
        added int;
      BEGIN
        SELECT max((e->>'wave')::int) INTO last FROM jsonb_array_elements(events) e;
        FOR round IN 0..coalesce(last, -1) LOOP
          -- Not beside a structural edit (FOR SHARE of the workflow), and the per-(workflow, contact) lock of
          -- a manual start (ExecutionsStore.enrol), taken in one order.
          PERFORM count(*) FROM (
            SELECT pg_advisory_xact_lock(hashtextextended(w.id::text || ':' || e.contact_id, 0))
            FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id text, wave int)
            JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
              AND w.trigger_config->>'eventName' = e.event_name
            JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
            WHERE e.wave = round
            ORDER BY w.id, e.contact_id
            FOR SHARE OF w
          ) locked;
          RETURN QUERY
          INSERT INTO executions
            (id, project_id, workflow_id, contact_id, status, context, trigger_key, current_step_id, due_at, since)
          SELECT enrol_uuidv7(), e.project_id, w.id, e.contact_id, 'RUNNING', e.context, e.trigger_key, s.id, now(),
            e.since
          FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id uuid, context jsonb,
            trigger_key text, since timestamptz, wave int)
          JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
            AND w.trigger_config->>'eventName' = e.event_name
          JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
          WHERE e.wave = round AND NOT EXISTS (
            SELECT 1 FROM executions x WHERE x.workflow_id = w.id AND x.contact_id = e.contact_id
              AND (NOT w.allow_reentry OR x.status IN ('RUNNING', 'WAITING'))
            -- Kept a subquery run per event (not an anti join), so its probe names the workflow and the contact.
            OFFSET 0
          )
          ON CONFLICT (workflow_id, trigger_key) WHERE trigger_key IS NOT NULL DO NOTHING
          RETURNING *;
          GET DIAGNOSTICS added = ROW_COUNT;
          n := n + added;
        END LOOP;
        IF n > 0 THEN PERFORM pg_notify('workflow_executions_due', ''); END IF;
      END $$;
    `,
  },
  {
    id: '010_enrol_triggered_v3',
    sql: `
      -- enrol_triggered_v2 (009) where an event may name the workflow it came from (source_workflow: the lifecycle
      -- events of an email a workflow sent): that workflow is not started by it, so a workflow that sends mail on
      -- email.sent cannot mail its contact without end. v2 stays for a replica of the release before.
      CREATE FUNCTION enrol_triggered_v3(events jsonb) RETURNS SETOF executions LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
        SET enable_hashjoin = off SET enable_mergejoin = off
      AS $$
      DECLARE
        round int;
        last int;
        n int := 0;
        added int;
      BEGIN
        SELECT max((e->>'wave')::int) INTO last FROM jsonb_array_elements(events) e;
        FOR round IN 0..coalesce(last, -1) LOOP
          -- Not beside a structural edit (FOR SHARE of the workflow), and the per-(workflow, contact) lock of
          -- a manual start (ExecutionsStore.enrol), taken in one order.
          PERFORM count(*) FROM (
            SELECT pg_advisory_xact_lock(hashtextextended(w.id::text || ':' || e.contact_id, 0))
            FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id text, wave int,
              source_workflow uuid)
            JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
              AND w.trigger_config->>'eventName' = e.event_name
            JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
            WHERE e.wave = round AND w.id IS DISTINCT FROM e.source_workflow
            ORDER BY w.id, e.contact_id
            FOR SHARE OF w
          ) locked;
          RETURN QUERY
          INSERT INTO executions
            (id, project_id, workflow_id, contact_id, status, context, trigger_key, current_step_id, due_at, since)
          SELECT enrol_uuidv7(), e.project_id, w.id, e.contact_id, 'RUNNING', e.context, e.trigger_key, s.id, now(),
            e.since
          FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id uuid, context jsonb,
            trigger_key text, since timestamptz, wave int, source_workflow uuid)
          JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
            AND w.trigger_config->>'eventName' = e.event_name
          JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
          WHERE e.wave = round AND w.id IS DISTINCT FROM e.source_workflow AND NOT EXISTS (
            SELECT 1 FROM executions x WHERE x.workflow_id = w.id AND x.contact_id = e.contact_id
              AND (NOT w.allow_reentry OR x.status IN ('RUNNING', 'WAITING'))
            -- Kept a subquery run per event (not an anti join), so its probe names the workflow and the contact.
            OFFSET 0
          )
          ON CONFLICT (workflow_id, trigger_key) WHERE trigger_key IS NOT NULL DO NOTHING
          RETURNING *;
          GET DIAGNOSTICS added = ROW_COUNT;
          n := n + added;
        END LOOP;
        IF n > 0 THEN PERFORM pg_notify('workflow_executions_due', ''); END IF;
      END $$;
    `,
  },
  {
    id: '011_chain_depth',
    sql: `
      -- How deep in a chain of workflows started by workflow mail an execution is (README "Workflows", loop guards):
      -- 0 unless its trigger was a lifecycle event of mail another execution sent, then that execution's depth + 1.
      -- Its SEND_EMAIL steps pass it on with their mail. Added with a constant default: no table rewrite.
      ALTER TABLE executions ADD COLUMN chain_depth smallint NOT NULL DEFAULT 0;
      -- enrol_triggered_v3 (010) where an event also gives the depth of its executions (depth, 0 when absent).
      -- v3 stays for a replica of the release before (its executions are enrolled at depth 0).
      CREATE FUNCTION enrol_triggered_v4(events jsonb) RETURNS SETOF executions LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
        SET enable_hashjoin = off SET enable_mergejoin = off
      AS $$
      DECLARE
        round int;
        last int;
        n int := 0;
        added int;
      BEGIN
        SELECT max((e->>'wave')::int) INTO last FROM jsonb_array_elements(events) e;
        FOR round IN 0..coalesce(last, -1) LOOP
          -- Not beside a structural edit (FOR SHARE of the workflow), and the per-(workflow, contact) lock of
          -- a manual start (ExecutionsStore.enrol), taken in one order.
          PERFORM count(*) FROM (
            SELECT pg_advisory_xact_lock(hashtextextended(w.id::text || ':' || e.contact_id, 0))
            FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id text, wave int,
              source_workflow uuid)
            JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
              AND w.trigger_config->>'eventName' = e.event_name
            JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
            WHERE e.wave = round AND w.id IS DISTINCT FROM e.source_workflow
            ORDER BY w.id, e.contact_id
            FOR SHARE OF w
          ) locked;
          RETURN QUERY
          INSERT INTO executions
            (id, project_id, workflow_id, contact_id, status, context, trigger_key, current_step_id, due_at, since,
              chain_depth)
          SELECT enrol_uuidv7(), e.project_id, w.id, e.contact_id, 'RUNNING', e.context, e.trigger_key, s.id, now(),
            e.since, coalesce(e.depth, 0)
          FROM jsonb_to_recordset(events) AS e (project_id uuid, event_name text, contact_id uuid, context jsonb,
            trigger_key text, since timestamptz, wave int, source_workflow uuid, depth smallint)
          JOIN workflows w ON w.project_id = e.project_id AND w.enabled AND w.trigger_type = 'EVENT'
            AND w.trigger_config->>'eventName' = e.event_name
          JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
          WHERE e.wave = round AND w.id IS DISTINCT FROM e.source_workflow AND NOT EXISTS (
            SELECT 1 FROM executions x WHERE x.workflow_id = w.id AND x.contact_id = e.contact_id
              AND (NOT w.allow_reentry OR x.status IN ('RUNNING', 'WAITING'))
            -- Kept a subquery run per event (not an anti join), so its probe names the workflow and the contact.
            OFFSET 0
          )
          ON CONFLICT (workflow_id, trigger_key) WHERE trigger_key IS NOT NULL DO NOTHING
          RETURNING *;
          GET DIAGNOSTICS added = ROW_COUNT;
          n := n + added;
        END LOOP;
        IF n > 0 THEN PERFORM pg_notify('workflow_executions_due', ''); END IF;
      END $$;
    `,
  },
  // Deleted projects: their messages handled afterwards write nothing (lib/project-tombstones.ts).
  wipedProjectsMigration('012_wiped_projects'),
  // Resets too: a reset project's messages written before its wipe write nothing.
  wipedProjectsKindMigration('013_wiped_projects_kind'),
];
