import { randomUUID } from 'node:crypto';
import type { NewEmail } from './emails-store.js';

/** A queued transactional email of this project with the Message-ID the platform sets (`<id@domain>`). */
export function testEmail(projectId: string, over: Partial<NewEmail> = {}): NewEmail {
  const id = over.id ?? randomUUID();
  return {
    id,
    project_id: projectId,
    contact_id: randomUUID(),
    to_email: `${id}@example.com`,
    to_name: '',
    from_email: 'hi@example.com',
    from_name: '',
    reply_to: '',
    subject: 's',
    html: '<p>x</p>',
    text: 'x',
    headers: {},
    template_id: null,
    type: 'TRANSACTIONAL',
    message_id: `<${id}@example.com>`,
    priority: 0,
    status: 'queued',
    ...over,
  };
}
