import { lifecycleMessage } from './email-events.js';

const email = {
  id: '33333333-3333-4333-8333-333333333333',
  project_id: '11111111-1111-4111-8111-111111111111',
  contact_id: '22222222-2222-4222-8222-222222222222',
  to_email: 'ann@example.com',
  subject: 'Hello',
  template_id: null,
};

describe('email lifecycle messages (README "Messages on the bus")', () => {
  test('emails.<type>: {projectId, contactId, emailId, type, occurredAt, data, campaignId, workflowId, test}', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    expect(lifecycleMessage(email, 'click', { url: 'https://x.test/a', isFirstClick: true }, at)).toEqual({
      subject: 'emails.click',
      payload: {
        projectId: email.project_id,
        contactId: email.contact_id,
        emailId: email.id,
        type: 'click',
        occurredAt: '2026-01-02T03:04:05.678Z',
        data: { email: 'ann@example.com', subject: 'Hello', url: 'https://x.test/a', isFirstClick: true },
        campaignId: '',
        workflowId: '',
        test: false,
      },
    });
  });

  test('data names the template when there is one; undefined values are left out, null ones kept', () => {
    const m = lifecycleMessage({ ...email, template_id: 't1' }, 'sent', { messageId: null, userAgent: undefined });
    expect(m.subject).toBe('emails.sent');
    expect((m.payload as { data: unknown }).data).toStrictEqual({
      email: 'ann@example.com',
      subject: 'Hello',
      templateId: 't1',
      messageId: null,
    });
    expect(typeof (m.payload as { occurredAt: unknown }).occurredAt).toBe('string');
  });

  test('the campaign, workflow and test flag of the row are on every message', () => {
    const row = { ...email, campaign_id: 'c1', workflow_id: 'w1', test: true };
    expect(lifecycleMessage(row, 'open').payload).toMatchObject({ campaignId: 'c1', workflowId: 'w1', test: true });
  });
});
