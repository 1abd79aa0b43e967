import { AppError } from '@svc/lib/errors';
import { validateCreate, validateReplace, validateTestEmail, type CampaignInput } from './campaign-input.js';

const SEG = '0190a5c4-8d2e-7b1a-9c3d-4e5f6a7b8c9d';
const TREE = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
const base: CampaignInput = { name: 'Launch', subject: 'Hi {{firstName}}', body: '<p>Hello</p>', from: 'news@x.test' };

function fieldsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(422);
    return (err as AppError).errors!.map((e) => e.field);
  }
  throw new Error('expected a 422');
}

describe('campaign input', () => {
  test('create defaults: MARKETING to ALL; name, subject, body and from are required', () => {
    const c = validateCreate(base);
    expect(c).toMatchObject({ type: 'MARKETING', audience_type: 'ALL', segment_id: null, audience_condition: null });
    expect(fieldsOf(() => validateCreate({}))).toEqual(['name', 'subject', 'body', 'from']);
  });

  test('SEGMENT requires segmentId and FILTERED requires an audienceCondition object (422 naming the field)', () => {
    expect(fieldsOf(() => validateCreate({ ...base, audienceType: 'SEGMENT' }))).toEqual(['segmentId']);
    expect(fieldsOf(() => validateCreate({ ...base, audienceType: 'FILTERED' }))).toEqual(['audienceCondition']);
    expect(fieldsOf(() => validateCreate({ ...base, audienceType: 'FILTERED', audienceCondition: [1] }))).toEqual([
      'audienceCondition',
    ]);
    expect(validateCreate({ ...base, audienceType: 'SEGMENT', segmentId: SEG }).segment_id).toBe(SEG);
    expect(validateCreate({ ...base, audienceType: 'FILTERED', audienceCondition: TREE }).audience_condition).toBe(
      TREE,
    );
  });

  test('audience fields that the audience type does not use are refused, not ignored', () => {
    expect(fieldsOf(() => validateCreate({ ...base, segmentId: SEG }))).toEqual(['segmentId']);
    expect(
      fieldsOf(() => validateCreate({ ...base, audienceType: 'SEGMENT', segmentId: SEG, audienceCondition: TREE })),
    ).toEqual(['audienceCondition']);
    expect(fieldsOf(() => validateCreate({ ...base, audienceType: 'SEGMENT', segmentId: 'nope' }))).toEqual([
      'segmentId',
    ]);
    expect(fieldsOf(() => validateCreate({ ...base, audienceType: 'EVERYONE' }))).toEqual(['audienceType']);
  });

  test('bad values are named: type, from, replyTo, a subject with a line break', () => {
    const bad = { ...base, type: 'NEWSLETTER', from: 'nope', replyTo: 'also nope', subject: 'a\nb' };
    expect(fieldsOf(() => validateCreate(bad)).sort()).toEqual(['from', 'replyTo', 'subject', 'type']);
  });

  test('replace keeps unsent fields; a new audience type drops the audience fields it does not use', () => {
    const current = validateCreate({ ...base, audienceType: 'SEGMENT', segmentId: SEG });
    expect(validateReplace({ name: 'Renamed' }, current)).toMatchObject({ name: 'Renamed', segment_id: SEG });
    expect(validateReplace({ audienceType: 'ALL' }, current)).toMatchObject({ audience_type: 'ALL', segment_id: null });
    expect(fieldsOf(() => validateReplace({ audienceType: 'FILTERED' }, current))).toEqual(['audienceCondition']);
    expect(fieldsOf(() => validateReplace({ audienceCondition: TREE }, current))).toEqual(['audienceCondition']);
    expect(validateReplace({ description: '' }, { ...current, description: 'x' }).description).toBe('');
  });

  test('a test send needs one valid address', () => {
    expect(validateTestEmail(' me@x.test ')).toBe('me@x.test');
    expect(fieldsOf(() => validateTestEmail(''))).toEqual(['email']);
  });
});
