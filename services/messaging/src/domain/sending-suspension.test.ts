import { SendingSuspensions, type SuspensionAuthority, type SuspensionState } from './sending-suspension.js';

/** An authority that answers when told to, counting the questions. */
function slowAuthority() {
  const waiting: Array<(s: SuspensionState) => void> = [];
  const authority: SuspensionAuthority & { asked: number } = {
    asked: 0,
    state() {
      authority.asked++;
      return new Promise((resolve) => waiting.push(resolve));
    },
    async suspend() {},
  };
  const answer = (s: SuspensionState) => {
    for (const resolve of waiting.splice(0)) resolve(s);
  };
  return { authority, answer };
}

const open: SuspensionState = { active: null, lastLiftedAt: null, deleted: false };

describe('SendingSuspensions', () => {
  test('sends that miss the cache together share one question to identity', async () => {
    const { authority, answer } = slowAuthority();
    const suspensions = new SendingSuspensions(authority, 60);
    const checks = Array.from({ length: 20 }, () => suspensions.check('p1'));
    expect(authority.asked).toBe(1);
    answer(open);
    await Promise.all(checks);
    await suspensions.check('p1');
    expect(authority.asked).toBe(1);
  });

  test('a change heard while a question is in flight is asked again by later sends', async () => {
    const { authority, answer } = slowAuthority();
    const suspensions = new SendingSuspensions(authority, 0);
    const first = suspensions.state('p1');
    suspensions.forget('p1');
    const second = suspensions.state('p1');
    expect(authority.asked).toBe(2);
    answer(open);
    await expect(Promise.all([first, second])).resolves.toEqual([open, open]);
  });
});
