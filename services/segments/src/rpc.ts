import { create, fromJson, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter } from '@connectrpc/connect';
import { MemberSchema, SegmentSchema, SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import type { MemberView } from './domain/contacts-port.js';
import type { Segments } from './domain/segments.js';
import type { SegmentRow } from './store/segment-row.js';

/** `undefined` when the client sent no value (field omitted), JSON otherwise. */
const json = (v?: Value): JsonValue | undefined => (v === undefined ? undefined : toJson(ValueSchema, v));

const segmentPb = (s: SegmentRow) =>
  create(SegmentSchema, {
    id: s.id,
    name: s.name,
    description: s.description ?? undefined,
    type: s.type,
    condition: s.condition === null ? undefined : fromJson(ValueSchema, s.condition as JsonValue),
    trackMembership: s.track_membership,
    memberCount: BigInt(s.member_count),
    projectId: s.project_id,
    slug: s.slug,
    createdAt: timestampFromDate(s.created_at),
    updatedAt: timestampFromDate(s.updated_at),
  });

const memberPb = (m: MemberView) =>
  create(MemberSchema, {
    id: m.id,
    email: m.email,
    subscribed: m.subscribed,
    data: m.data as JsonObject,
    createdAt: m.createdAt && timestampFromDate(m.createdAt),
    updatedAt: m.updatedAt && timestampFromDate(m.updatedAt),
  });

export function segmentsRoutes(segments: Segments) {
  return (router: ConnectRouter) =>
    router.service(SegmentsService, {
      async findSegmentsUsing(req) {
        return { segments: await segments.findUsing(req.projectId, { field: req.field, eventName: req.eventName }) };
      },
      async listSegments(req) {
        return { segments: (await segments.list(req.projectId)).map(segmentPb) };
      },
      async createSegment(req) {
        const row = await segments.create(req.projectId, {
          name: req.name,
          description: req.description,
          type: req.type,
          condition: json(req.condition),
          trackMembership: req.trackMembership,
        });
        return { segment: segmentPb(row) };
      },
      async getSegment(req) {
        const row =
          !req.id && req.slug
            ? await segments.bySlugUnlessDeleting(req.projectId, req.slug)
            : req.unlessDeleting
              ? await segments.getUnlessDeleting(req.projectId, req.id)
              : await segments.get(req.projectId, req.id);
        return { segment: segmentPb(row) };
      },
      async updateSegment(req) {
        const row = await segments.update(req.projectId, req.id, {
          name: req.name,
          description: req.clearDescription ? null : req.description,
          condition: json(req.condition),
          trackMembership: req.trackMembership,
        });
        return { segment: segmentPb(row) };
      },
      async deleteSegment(req) {
        await segments.remove(req.projectId, req.id);
        return {};
      },
      async listMembers(req) {
        const r = await segments.members(req.projectId, req.id, req.page || 1, req.pageSize || 20);
        return { members: r.members.map(memberPb), total: BigInt(r.total) };
      },
      async addMembers(req) {
        return segments.addMembers(req.projectId, req.id, req.emails, req.createMissing, req.subscribed);
      },
      async removeMembers(req) {
        return segments.removeMembers(req.projectId, req.id, req.emails);
      },
      async computeSegment(req) {
        const r = await segments.compute(req.projectId, req.id);
        return { segment: segmentPb(r.segment), entered: r.entered, exited: r.exited };
      },
      async refreshSegment(req) {
        return { segment: segmentPb(await segments.refresh(req.projectId, req.id)) };
      },
    });
}
