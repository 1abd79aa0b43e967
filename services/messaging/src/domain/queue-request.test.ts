import { AppError, type FieldError } from '@svc/lib/errors';
import { type QueueInput, parseQueueRequest, recipientSchema, validRecipient } from './queue-request.js';

// QueueEmails' recipients are checked by hand (validRecipient) and go to zod only when one is not certainly
// valid: the output and the errors must be zod's in every case.

const CONTACT = '01a20ef8-20e6-7213-9124-9460b32752bd';
const good = {
  contactId: CONTACT,
  email: 'reader1@campaign.example',
  name: '',
  subscribed: true,
  variables: { firstName: 'Reader1', plan: 'pro', nested: { a: [1, 2] } },
  dedupeKey: `campaign:${CONTACT}:${CONTACT}`,
};
const input = (recipients: unknown[]): QueueInput => ({
  content: {
    subject: 'Hello {{firstName}}',
    body: '<p>Hi</p>',
    from: { email: 'news@example.com' },
    type: 'MARKETING',
  },
  recipients: recipients as QueueInput['recipients'],
  source: 'campaign',
  campaignId: CONTACT,
  test: false,
});

function errorsOf(recipients: unknown[]): FieldError[] {
  try {
    parseQueueRequest(input(recipients));
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(422);
    return (err as AppError).errors ?? [];
  }
  throw new Error('expected a throw');
}

/** Recipients one rule away from `good` (or odd but valid), each checked against zod below. */
const VARIANTS: unknown[] = [
  good,
  { ...good, dedupeKey: '' },
  { ...good, dedupeKey: undefined },
  { ...good, dedupeKey: 'k'.repeat(300) },
  { ...good, dedupeKey: 'k'.repeat(301) },
  { ...good, dedupeKey: 7 },
  { ...good, workflowDepth: 0 },
  { ...good, workflowDepth: 3 },
  { ...good, workflowDepth: 1000 },
  { ...good, workflowDepth: 1001 },
  { ...good, workflowDepth: -1 },
  { ...good, workflowDepth: 1.5 },
  { ...good, workflowDepth: '3' },
  { ...good, contactId: CONTACT.toUpperCase() },
  { ...good, contactId: '00000000-0000-0000-0000-000000000000' },
  { ...good, contactId: `${CONTACT}x` },
  { ...good, contactId: CONTACT.replace(/-/g, '') },
  { ...good, contactId: 'not-a-uuid' },
  { ...good, contactId: undefined },
  { ...good, email: 'no-at-sign' },
  { ...good, email: 'a@b' },
  { ...good, email: '' },
  { ...good, email: 'Ann <ann@example.com>' },
  { ...good, email: 5 },
  { ...good, name: 'Ann' },
  { ...good, name: 'x'.repeat(200) },
  { ...good, name: 'x'.repeat(201) },
  { ...good, name: 'Ann\nBcc: x@y.z' },
  { ...good, name: 'Ann\r' },
  { ...good, name: undefined },
  { ...good, subscribed: false },
  { ...good, subscribed: 'true' },
  { ...good, variables: {} },
  { ...good, variables: [] },
  { ...good, variables: null },
  { ...good, variables: 'x' },
  { ...good, variables: new Date() },
  { ...good, variables: new Map() },
  { ...good, variables: Object.create(null) },
  { ...good, extra: 'dropped' },
  { ...good, $typeName: 'svc.messaging.v1.QueueRecipient' },
  null,
  'reader@example.com',
  [good],
];

describe('QueueEmails recipients', () => {
  test.each(VARIANTS.map((v, i) => [i, v]))(
    'variant %i: the hand check accepts only what zod accepts, as zod outputs it',
    (_, v) => {
      const zod = recipientSchema.safeParse(v);
      const fast = validRecipient(v);
      if (fast !== undefined) {
        expect(zod.success).toBe(true);
        expect(fast).toEqual(zod.data);
      }
      // The usual shapes never go to zod.
      if (zod.success) expect(fast).toBeDefined();
      // Either way the request answers zod's result.
      if (zod.success) expect(parseQueueRequest(input([good, v])).recipients[1]).toEqual(zod.data);
      else expect(errorsOf([good, v]).length).toBeGreaterThan(0);
    },
  );

  test('an invalid recipient among valid ones is named by zod, with its index', () => {
    expect(errorsOf([good, { ...good, email: 'nope' }, good, { ...good, name: 'a\nb' }])).toEqual([
      expect.objectContaining({ field: 'recipients.1.email' }),
      expect.objectContaining({ field: 'recipients.3.name' }),
    ]);
  });

  test('a valid batch answers each recipient as zod would: unknown keys dropped, an empty dedupe key none', () => {
    const r = parseQueueRequest(input([{ ...good, $typeName: 'x', dedupeKey: '' }, good])).recipients;
    expect(r).toEqual([
      {
        contactId: CONTACT,
        email: good.email,
        name: '',
        subscribed: true,
        variables: good.variables,
        dedupeKey: undefined,
      },
      { ...good },
    ]);
    expect(Object.keys(r[0])).not.toContain('$typeName');
  });

  test('the content rules still apply when every recipient is valid, and the count limits too', () => {
    expect(() => parseQueueRequest({ ...input([good]), content: { from: { email: 'news@example.com' } } })).toThrow(
      AppError,
    );
    expect(errorsOf([]).map((e) => e.field)).toEqual(['recipients']);
    expect(errorsOf(Array.from({ length: 1001 }, () => good)).map((e) => e.field)).toEqual(['recipients']);
  });
});
