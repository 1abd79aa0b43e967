import type { Activity, Domain, EmailVerification, Template } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { iso } from './identity-json.js';

export const domainJson = (d: Domain) => ({
  id: d.id,
  domain: d.domain,
  projectId: d.projectId,
  status: d.status,
  verified: d.status === 'verified',
  records: d.records.map((r) => ({ type: r.type, name: r.name, value: r.value, purpose: r.purpose, verified: r.verified })),
  dkimSelector: d.dkimSelector,
  createdAt: iso(d.createdAt),
  verifiedAt: iso(d.verifiedAt),
  lastCheckedAt: iso(d.lastCheckedAt),
});

export const templateJson = (t: Template) => ({
  id: t.id,
  name: t.name,
  description: t.description,
  subject: t.subject,
  body: t.body,
  from: t.fromEmail,
  fromName: t.fromName || null,
  replyTo: t.replyTo || null,
  type: t.type,
  projectId: t.projectId,
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt),
});

export const activityJson = (a: Activity) => ({
  id: a.id,
  type: a.type,
  contactId: a.contactId || null,
  emailId: a.emailId || null,
  email: a.email || null,
  name: a.name || null,
  data: a.data ?? {},
  occurredAt: iso(a.occurredAt),
});

export const verificationJson = (v: EmailVerification) => ({
  email: v.email,
  valid: v.valid,
  isDisposable: v.isDisposable,
  isAlias: v.isAlias,
  isTypo: v.isTypo,
  isPlusAddressed: v.isPlusAddressed,
  isPersonalEmail: v.isPersonalEmail,
  domainExists: v.domainExists,
  hasWebsite: v.hasWebsite,
  hasMxRecords: v.hasMxRecords,
  reasons: v.reasons,
  ...(v.suggestion ? { suggestion: v.suggestion } : {}),
});
