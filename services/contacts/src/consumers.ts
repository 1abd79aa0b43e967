import type { Bus } from '@svc/lib/bus';
import type { Events } from './domain/events.js';
import type { ContactsStore } from './store/contacts-store.js';

interface EmailLifecycle {
  projectId: string;
  contactId: string;
  emailId: string;
  type: string;
  occurredAt: string;
  data?: object;
}

/** What the contacts service hears on the bus: email lifecycle (for filters) and project deletion. */
export async function subscribeContactsConsumers(bus: Bus, d: { events: Events; contacts: ContactsStore; forgetTypes(projectId: string): void }): Promise<void> {
  await bus.subscribe('contacts-email-activity', ['emails.>'], async (m) => {
    await d.events.recordEmailActivity(m.id, m.data as EmailLifecycle);
  });
  await bus.subscribe('contacts-projects', ['identity.project.deleted'], async (m) => {
    const { projectId } = m.data as { projectId: string };
    await d.contacts.deleteProject(projectId);
    d.forgetTypes(projectId);
  });
}
