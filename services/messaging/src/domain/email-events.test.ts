import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { busMessage } from '@svc/lib/bus-topic';
import { emailLifecycleSubject, MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import {
  campaignSentMessages,
  EMAILS_PER_MESSAGE,
  emailsSentMessages,
  lifecycleMessage,
  lifecyclePayload,
} from './email-events.js';

const email = {
  id: '33333333-3333-4333-8333-333333333333',
  project_id: '11111111-1111-4111-8111-111111111111',
  contact_id: '22222222-2222-4222-8222-222222222222',
  to_email: 'ann@example.com',
  subject: 'Hello',
  template_id: null,
};

describe('email lifecycle messages (README "Messages on the bus")', () => {
  test('emails.<type>: {projectId, contactId, emailId, type, occurredAt, data, campaignId, workflowId, ...}', () => {
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
        workflowDepth: 0,
        automatic: false,
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

  test('data: the email, subject and template, then the step values in order; undefined removes a key', () => {
    const m = lifecyclePayload({ ...email, template_id: 't1' }, 'bounce', {
      reason: 'r',
      subject: 'Override',
      templateId: undefined,
      bounceType: 'hard',
    });
    expect(JSON.stringify(m.data)).toBe(
      '{"email":"ann@example.com","subject":"Override","reason":"r","bounceType":"hard"}',
    );
  });

  test('the campaign, workflow and test flag of the row are on every message', () => {
    const row = { ...email, campaign_id: 'c1', workflow_id: 'w1', test: true };
    expect(lifecycleMessage(row, 'open').payload).toMatchObject({ campaignId: 'c1', workflowId: 'w1', test: true });
  });

  test('the payload is what toJson of the generated EmailLifecycle writes', () => {
    const rows = [
      email,
      { ...email, template_id: 't1', campaign_id: 'c1', workflow_id: null, test: true },
      { ...email, contact_id: null as unknown as string, subject: 'Ünïcode "quoted" \n' },
    ];
    const dates = [new Date('2026-01-02T03:04:05.000Z'), new Date('2026-01-02T03:04:05.120Z'), new Date()];
    const data = { url: 'https://x.test/a?b=1', n: 2.5, flag: false, none: null, nested: { a: [1, 'b', null] } };
    for (const row of rows)
      for (const at of dates) {
        const m = lifecycleMessage(row, 'click', data, at);
        const generic = busMessage(
          MESSAGING_TOPICS.emailLifecycle,
          {
            projectId: row.project_id,
            contactId: row.contact_id ?? '',
            emailId: row.id,
            type: 'click',
            occurredAt: timestampFromDate(at),
            data: {
              email: row.to_email,
              subject: row.subject,
              ...(row.template_id ? { templateId: row.template_id } : {}),
              ...data,
            },
            campaignId: (row as { campaign_id?: string }).campaign_id ?? '',
            workflowId: (row as { workflow_id?: string | null }).workflow_id ?? '',
            test: (row as { test?: boolean }).test ?? false,
          },
          emailLifecycleSubject('click'),
        );
        expect(m).toStrictEqual(generic);
        expect(JSON.stringify(m.payload)).toBe(JSON.stringify(generic.payload));
      }
  });

  test('deliveries.campaign_sent: one per campaign of a batch with its contacts; no test mail, no others', () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    const [c1, c2] = ['44444444-4444-4444-8444-444444444444', '55555555-5555-4555-8555-555555555555'];
    const row = (contact: string, campaign: string | null, test = false) => ({
      project_id: email.project_id,
      contact_id: contact,
      campaign_id: campaign,
      test,
    });
    const messages = campaignSentMessages(
      [row('a', c1), row('b', c2), row('c', c1), row('d', null), row('e', c1, true), row('f', c2)],
      at,
    );
    expect(messages).toStrictEqual([
      { subject: 'deliveries.campaign_sent', payload: sent(c1, ['a', 'c']) },
      { subject: 'deliveries.campaign_sent', payload: sent(c2, ['b', 'f']) },
    ]);
    expect(campaignSentMessages([row('d', null), row('e', c1, true)])).toEqual([]);

    function sent(campaignId: string, contactIds: string[]) {
      return { projectId: email.project_id, campaignId, contactIds, occurredAt: '2026-01-02T03:04:05Z' };
    }
  });

  test('deliveries.emails_sent: one per project of a batch, its emails in order, as toJson of EmailsSent', () => {
    const at = new Date('2026-01-02T03:04:05.120Z');
    const other = '66666666-6666-4666-8666-666666666666';
    const rows = [
      email,
      { ...email, project_id: other, id: '77777777-7777-4777-8777-777777777777' },
      { ...email, template_id: 't1', campaign_id: 'c1', test: true, id: '88888888-8888-4888-8888-888888888888' },
    ];
    const payloads = rows.map((r) => lifecyclePayload(r, 'sent', { messageId: `<${r.id}@x.test>` }, at));
    const messages = emailsSentMessages(payloads);
    expect(messages.map((m) => m.subject)).toEqual(['deliveries.emails_sent', 'deliveries.emails_sent']);
    const emailsOf = (projectId: string) =>
      payloads.filter((p) => p.projectId === projectId).map((p) => ({ ...p, occurredAt: timestampFromDate(at) }));
    const generic = [email.project_id, other].map((projectId) =>
      busMessage(MESSAGING_TOPICS.emailsSent, { projectId, emails: emailsOf(projectId) }),
    );
    expect(messages).toStrictEqual(generic);
    expect(JSON.stringify(messages.map((m) => m.payload))).toBe(JSON.stringify(generic.map((m) => m.payload)));
    expect(emailsSentMessages([])).toEqual([]);
    // At most EMAILS_PER_MESSAGE emails a message, in order.
    const many = Array.from({ length: 2 * EMAILS_PER_MESSAGE + 1 }, (_, i) => ({ ...payloads[0], emailId: `e${i}` }));
    const parts = emailsSentMessages(many).map((m) => (m.payload as { emails: Array<{ emailId: string }> }).emails);
    expect(parts.map((p) => p.length)).toEqual([EMAILS_PER_MESSAGE, EMAILS_PER_MESSAGE, 1]);
    expect(parts.flat().map((e) => e.emailId)).toEqual(many.map((e) => e.emailId));
  });
});
