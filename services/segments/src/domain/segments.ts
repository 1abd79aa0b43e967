import { badRequest, conflict, notFound, validationError, type FieldError } from '@svc/lib/errors';
import { isValidEmail } from '@svc/lib/email-syntax';
import { withTransaction, type Queryable } from '@svc/lib/db';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import type { SegmentRow } from '../store/segment-row.js';
import type { SegmentsStore } from '../store/segments-store.js';
import type { CampaignUsage } from './campaign-usage.js';
import { membersOf, type ContactsPort } from './contacts-port.js';
import { segmentReferences } from '@svc/lib/segment-references';
import { filterReference } from './references.js';
import { validateCreate, validatePatch, type CreateInput, type PatchInput } from './segment-input.js';
import { freeSlug, slugify } from './slug.js';
import type { Tracking } from './tracking.js';
import type { WorkflowUsage } from './workflow-usage.js';

/** Emails per members call (as bulk ids). */
export const MAX_MEMBER_EMAILS = 1000;
export const MAX_PAGE_SIZE = 100;

/** Segments of a project: SPEC.md's rules; contacts evaluates conditions and holds static members. */
export class Segments {
  constructor(
    private readonly store: SegmentsStore,
    private readonly contacts: ContactsPort,
    private readonly tracking: Tracking,
    private readonly campaigns: CampaignUsage,
    private readonly workflows: WorkflowUsage,
  ) {}

  list(projectId: string): Promise<SegmentRow[]> {
    return this.store.list(projectId);
  }

  /** The segments whose condition references the field or the event name (usage endpoints). */
  findUsing(projectId: string, ref: { field?: string; eventName?: string }): Promise<{ id: string; name: string }[]> {
    return this.store.referencing(projectId, filterReference(ref));
  }

  async get(projectId: string, id: string): Promise<SegmentRow> {
    const row = isUuid(id) ? await this.store.get(this.store.pool, projectId, id) : null;
    if (!row) throw notFound('segment', id);
    return row;
  }

  /**
   * As `get`, for a caller about to start using the segment in a transaction of its own (a campaign send): 409 at
   * once while a DELETE of it is under way. That DELETE waits for the caller's transaction (ListCampaignsUsing) and
   * would see its use: the caller gives up instead of waiting for it in turn.
   */
  async getUnlessDeleting(projectId: string, id: string): Promise<SegmentRow> {
    const row = isUuid(id) ? await this.store.getUnlessDeleting(projectId, id) : null;
    if (row === 'deleting') throw conflict(`Segment ${id} is being deleted`, { segmentId: id });
    if (!row) throw notFound('segment', id);
    return row;
  }

  /**
   * The segment of a slug, for a workflow about to listen for its `segment.<slug>.entry` / `.exit` events (in the
   * transaction that stores it): 409 at once while a DELETE of it is under way, 404 when the project has none.
   */
  async bySlugUnlessDeleting(projectId: string, slug: string): Promise<SegmentRow> {
    const row = await this.store.getUnlessDeleting(projectId, slug, 'slug');
    if (row === 'deleting') throw conflict(`Segment ${slug} is being deleted`, { slug });
    if (!row) throw notFound('segment', slug);
    return row;
  }

  /** Contacts validates a DYNAMIC condition first (its 422/400 is the answer): nothing is stored on bad input. */
  async create(projectId: string, input: CreateInput): Promise<SegmentRow> {
    const v = validateCreate(input);
    await this.checkReferences(projectId, v.condition);
    const id = uuidv7();
    await this.contacts.define(projectId, id, v.condition);
    const memberCount = v.type === 'DYNAMIC' ? await this.contacts.count(projectId, membersOf(id)) : 0;
    const base = slugify(v.name);
    // Checked again, holding the segments it names until it is stored: a DELETE of one either sees it (409) or
    // went first (422 here), never leaves it naming a deleted segment.
    let row = await withTransaction(this.store.pool, async (tx) => {
      await this.checkReferences(projectId, v.condition, tx);
      let inserted: SegmentRow | null = null;
      while (!inserted) {
        const slug = freeSlug(base, await this.store.slugsLike(projectId, base, tx));
        inserted = await this.store.insert(tx, { id, projectId, ...v, slug, memberCount });
      }
      return inserted;
    }).catch(async (err) => {
      await this.contacts.forget(projectId, id).catch(() => undefined);
      throw err;
    });
    if (row.track_membership && row.type === 'DYNAMIC')
      row = (await this.tracking.compute(row, { events: false })).segment;
    return row;
  }

  async update(projectId: string, id: string, input: PatchInput): Promise<SegmentRow> {
    const before = await this.get(projectId, id);
    const p = validatePatch(input, before.type);
    if (p.condition !== undefined) await this.checkReferences(projectId, p.condition);
    // As in create: the named segments are held until the new condition is stored.
    const updated = await withTransaction(this.store.pool, async (tx) => {
      if (p.condition !== undefined) {
        await this.checkReferences(projectId, p.condition, tx);
        await this.contacts.define(projectId, id, p.condition);
      }
      return this.store.update(tx, projectId, id, p);
    });
    if (!updated) throw notFound('segment', id);
    let row = updated;
    if (p.condition !== undefined)
      row = await this.store.setCount(this.store.pool, id, await this.contacts.count(projectId, membersOf(id)));
    if (row.track_membership && !before.track_membership)
      row = (await this.tracking.compute(row, { events: false })).segment;
    if (!row.track_membership && before.track_membership) await this.tracking.stopTracking(id);
    return row;
  }

  /**
   * A segment an active campaign uses, directly or through segments whose conditions reference it, stays (409):
   * without it they would mean something else mid-send. So does one that other segments' conditions reference
   * (409 naming them): they would silently match nobody. So does one whose entry or exit events a workflow starts
   * on or waits for (409 naming the workflows): it would never hear them again. Contacts forgets it first: a retry
   * after a failure finishes the job instead of leaving a stale definition.
   */
  async remove(projectId: string, id: string): Promise<void> {
    // The row is locked until it is deleted: a create or PATCH naming it (which holds it) finishes first and is seen.
    await withTransaction(this.store.pool, (tx) => this.removeLocked(tx, projectId, id));
  }

  private async removeLocked(tx: Queryable, projectId: string, id: string): Promise<void> {
    const row = isUuid(id) ? await this.store.get(tx, projectId, id, 'delete') : null;
    if (!row) throw notFound('segment', id);
    const through = await this.referencing(projectId, id, tx);
    const counts = await Promise.all(
      [id, ...through].map((segmentId) => this.campaigns.activeCampaignsUsing(projectId, segmentId)),
    );
    const active = counts.reduce((a, b) => a + b, 0);
    if (active > 0) {
      throw conflict('The segment is used by a scheduled or sending campaign', {
        campaigns: active,
        ...(through.length ? { throughSegments: through } : {}),
      });
    }
    if (through.length) {
      throw conflict("Other segments' conditions reference this segment: change or delete them first", {
        segments: through,
      });
    }
    const events = [`segment.${row.slug}.entry`, `segment.${row.slug}.exit`];
    const workflows = await this.workflows.workflowsWaitingFor(projectId, events);
    if (workflows.length) {
      throw conflict("Workflows start on or wait for this segment's entry or exit: change or delete them first", {
        workflows,
      });
    }
    await this.contacts.forget(projectId, id);
    await this.store.remove(projectId, id, tx);
  }

  /** Live for DYNAMIC segments, stored members for STATIC ones (both evaluated by contacts). */
  async members(projectId: string, id: string, page: number, pageSize: number) {
    await this.get(projectId, id);
    return this.contacts.page(projectId, membersOf(id), pageSize, (page - 1) * pageSize);
  }

  async addMembers(projectId: string, id: string, emails: string[], createMissing: boolean, subscribed?: boolean) {
    const row = await this.staticSegment(projectId, id);
    const unique = checkEmails(emails);
    const { found, missing } = await this.contacts.lookup(projectId, unique);
    const ids = found.map((c) => c.id);
    let created = 0;
    if (createMissing && missing.length) {
      ids.push(...(await this.contacts.create(projectId, missing, subscribed)));
      created = missing.length;
    }
    if (row.track_membership) await this.tracking.baselineStatic(row);
    const { added } = await this.contacts.setMembers(projectId, id, ids, []);
    await this.membersChanged(row);
    return { added, created, notFound: createMissing ? [] : missing };
  }

  async removeMembers(projectId: string, id: string, emails: string[]) {
    const row = await this.staticSegment(projectId, id);
    const { found } = await this.contacts.lookup(projectId, checkEmails(emails));
    if (row.track_membership) await this.tracking.baselineStatic(row);
    const { removed } = await this.contacts.setMembers(
      projectId,
      id,
      [],
      found.map((c) => c.id),
    );
    await this.membersChanged(row);
    return { removed };
  }

  /** A tracked segment's stored membership against its members now (a STATIC one's is kept as they change). */
  async compute(projectId: string, id: string) {
    const row = await this.get(projectId, id);
    if (!row.track_membership) {
      throw badRequest('Only a segment with trackMembership can be computed', {
        type: row.type,
        trackMembership: row.track_membership,
      });
    }
    if (row.type === 'STATIC') await this.tracking.baselineStatic(row);
    return this.tracking.compute(row, { events: true });
  }

  /** The cached count only: no membership rows, no events. */
  async refresh(projectId: string, id: string): Promise<SegmentRow> {
    await this.get(projectId, id);
    return this.recount(projectId, id);
  }

  /** A segment a condition names must be one of the project's (not deleted, not another project's): 422 naming it. */
  private async checkReferences(projectId: string, condition: unknown, tx?: Queryable): Promise<void> {
    const refs = segmentReferences(condition);
    const known = await this.store.existing(projectId, [...new Set(refs.map((r) => r.id))], tx);
    const errors: FieldError[] = refs
      .filter((r) => !known.has(r.id))
      .map((r) => ({
        field: r.field,
        message: 'Segment not found in this project',
        code: 'not_found',
        received: r.id,
      }));
    if (errors.length) throw validationError(errors);
  }

  /** The segments whose conditions reference `id`, directly or through one another. */
  private async referencing(projectId: string, id: string, db?: Queryable): Promise<string[]> {
    const uses = (await this.store.list(projectId, db)).map((s) => ({
      id: s.id,
      refs: new Set(segmentReferences(s.condition).map((r) => r.id)),
    }));
    const found = new Set<string>([id]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const s of uses) {
        if (found.has(s.id) || ![...s.refs].some((r) => found.has(r))) continue;
        found.add(s.id);
        grew = true;
      }
    }
    found.delete(id);
    return [...found];
  }

  /**
   * After a STATIC segment's members changed: a tracked one records the joins and leaves (SPEC.md: trackMembership
   * emits entry and exit events as contacts join and leave) and counts; any other only recounts.
   */
  private async membersChanged(row: SegmentRow): Promise<void> {
    if (row.track_membership) await this.tracking.compute(row, { events: true });
    else await this.recount(row.project_id, row.id);
  }

  private async recount(projectId: string, id: string): Promise<SegmentRow> {
    return this.store.setCount(this.store.pool, id, await this.contacts.count(projectId, membersOf(id)));
  }

  private async staticSegment(projectId: string, id: string): Promise<SegmentRow> {
    const row = await this.get(projectId, id);
    if (row.type !== 'STATIC')
      throw badRequest('Members can be added to or removed from a STATIC segment only', { type: row.type });
    return row;
  }
}

/** 1..1000 syntactically valid addresses, deduplicated case-insensitively (422 naming the bad item). */
function checkEmails(emails: string[]): string[] {
  if (!emails.length || emails.length > MAX_MEMBER_EMAILS) {
    const message = `emails must hold 1 to ${MAX_MEMBER_EMAILS} addresses`;
    throw validationError([{ field: 'emails', message, code: emails.length ? 'too_big' : 'too_small' }]);
  }
  const bad = emails.findIndex((e) => !isValidEmail(e));
  if (bad !== -1) {
    throw validationError([
      { field: `emails.${bad}`, message: 'Invalid email', code: 'invalid_string', received: emails[bad] },
    ]);
  }
  const seen = new Map<string, string>();
  for (const e of emails) if (!seen.has(e.toLowerCase())) seen.set(e.toLowerCase(), e);
  return [...seen.values()];
}
