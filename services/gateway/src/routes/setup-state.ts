import type { Client } from '@connectrpc/connect';
import type { Router } from 'express';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { Authenticator } from '../http/auth.js';
import { z } from 'zod';
import { ApiRouter, id } from '../http/api.js';

export interface SetupStateSources {
  identity: Client<typeof IdentityService>;
  contacts: Client<typeof ContactsService>;
  messaging: Client<typeof MessagingService>;
}

/** Statuses of an email that left the platform (accepted by the receiving server, or later news of it). */
const SENT_STATUSES = 'sent,delivered,complained';

/** The onboarding steps in the order a new project usually takes them, each with where to go next. */
const STEPS = [
  { key: 'hasVerifiedDomain', next: 'POST /domains, publish its DNS records, then GET /domains/{id}/verify' },
  { key: 'hasTemplate', next: 'POST /templates' },
  { key: 'hasContacts', next: 'POST /contacts, or import a CSV with POST /contacts/import' },
  { key: 'hasTrackedEvent', next: 'POST /v1/track with a contact email and an event name' },
  { key: 'hasSentEmail', next: 'POST /v1/send from an address of a verified domain' },
] as const;

type StepKey = (typeof STEPS)[number]['key'];

/**
 * GET /projects/{id}/setup-state (session): what a new project has done of its onboarding, composed from the
 * services' own records. Membership is identity's GetProject: another user's project answers as it does (404).
 */
export function setupStateRouter(sources: SetupStateSources, auth: Authenticator): Router {
  const r = new ApiRouter();

  r.get(
    '/projects/:id/setup-state',
    {
      summary: 'Onboarding steps of a project and what to do next',
      tag: 'Projects',
      auth: 'session',
      responses: {
        200: z.object({
          projectId: id,
          steps: z.array(
            z.object({
              key: z.enum(['hasVerifiedDomain', 'hasTemplate', 'hasContacts', 'hasTrackedEvent', 'hasSentEmail']),
              done: z.boolean(),
              next: z.string(),
            }),
          ),
          complete: z.boolean(),
        }),
      },
      errors: [404],
    },
    auth.session(),
    async (req, res) => {
      const { identity, contacts, messaging } = sources;
      const project = (await identity.getProject({ userId: req.userId, projectId: String(req.params.id) })).project!;
      const projectId = project.id;
      const [domains, templates, contactPage, topEvents, emails] = await Promise.all([
        messaging.listDomains({ projectId }),
        messaging.listTemplates({ projectId, page: '1', pageSize: '1' }),
        contacts.listContacts({ projectId, limit: 1 }),
        // Client-tracked names only: contacts leaves its own (email.*, contact.*, segment.*) out of the top list.
        contacts.getTopEvents({ projectId, days: 3650, limit: 1 }),
        messaging.listEmails({ projectId, limit: '1', status: SENT_STATUSES }),
      ]);
      const done: Record<StepKey, boolean> = {
        hasVerifiedDomain: domains.domains.some((d) => d.status === 'verified'),
        hasTemplate: templates.total > 0n || templates.templates.length > 0,
        hasContacts: contactPage.total > 0n || contactPage.contacts.length > 0,
        hasTrackedEvent: topEvents.names.length > 0,
        hasSentEmail: emails.emails.length > 0,
      };
      const steps = STEPS.map((s) => ({ key: s.key, done: done[s.key], next: s.next }));
      res.json({ projectId, steps, complete: steps.every((s) => s.done) });
    },
  );

  return r.router;
}
