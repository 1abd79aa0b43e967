import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Member, Segment } from '@svc/proto/svc/segments/v1/segments_pb';
import { iso } from './identity-json.js';

export const segmentJson = (s: Segment) => ({
  id: s.id,
  name: s.name,
  description: s.description ?? null,
  type: s.type,
  condition: s.condition ? toJson(ValueSchema, s.condition) : null,
  trackMembership: s.trackMembership,
  memberCount: Number(s.memberCount),
  slug: s.slug,
  projectId: s.projectId,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
});

export const memberJson = (m: Member) => ({
  id: m.id,
  email: m.email,
  subscribed: m.subscribed,
  data: m.data ?? {},
  createdAt: iso(m.createdAt),
  updatedAt: iso(m.updatedAt),
});
