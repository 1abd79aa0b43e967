import { audienceTree, membersOf, references, referencesField, subscribedOnly } from './audience.js';

const SEG = '0190a5c4-8d2e-7b1a-9c3d-4e5f6a7b8c9d';

describe('campaign audiences', () => {
  test('ALL streams every contact, SEGMENT the segment members, FILTERED the filter tree', () => {
    const tree = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    expect(audienceTree({ audience_type: 'ALL', segment_id: null, audience_condition: null })).toBeUndefined();
    expect(audienceTree({ audience_type: 'SEGMENT', segment_id: SEG, audience_condition: null })).toEqual(
      membersOf(SEG),
    );
    expect(audienceTree({ audience_type: 'FILTERED', segment_id: null, audience_condition: tree })).toBe(tree);
  });

  test('MARKETING and HEADLESS go to subscribed contacts only, TRANSACTIONAL to all', () => {
    expect(subscribedOnly('MARKETING')).toBe(true);
    expect(subscribedOnly('HEADLESS')).toBe(true);
    expect(subscribedOnly('TRANSACTIONAL')).toBe(false);
  });

  test('references name the segments, fields and events of a tree, nested conditions included', () => {
    const refs = references({
      logic: 'OR',
      groups: [
        {
          filters: [
            { field: 'data.company.size', operator: 'gt', value: 10 },
            { field: 'event.signup', operator: 'triggered' },
          ],
          conditions: {
            logic: 'AND',
            groups: [
              {
                filters: [
                  { field: `segment.${SEG.toUpperCase()}`, operator: 'memberOfSegment' },
                  { field: 'anything', operator: 'notMemberOfSegment', value: SEG },
                  { field: 'email.open', operator: 'triggeredWithin', value: 3 },
                  { field: 'subscribed', operator: 'equals', value: true },
                ],
              },
            ],
          },
        },
      ],
    });
    expect([...refs.segments]).toEqual([SEG]);
    expect([...refs.events]).toEqual(['signup']);
    expect(referencesField(refs, 'company')).toBe(true);
    expect(referencesField(refs, 'data.company.size')).toBe(true);
    expect(referencesField(refs, 'subscribed')).toBe(true);
    expect(referencesField(refs, 'comp')).toBe(false);
  });
});
