import { serviceTokenProblem, tokenMatches } from './service-auth.js';

const token = 'a-service-token-of-at-least-32-characters';

describe('tokenMatches', () => {
  test('accepts exactly the bearer token', () => {
    expect(tokenMatches(token, `Bearer ${token}`)).toBe(true);
    expect(tokenMatches(token, `bearer ${token}`)).toBe(true);
  });

  test('refuses a missing, empty, wrong, prefixed or non-bearer value', () => {
    for (const header of [
      null,
      '',
      'Bearer ',
      `Bearer ${token}x`,
      `Bearer ${token.slice(1)}`,
      token,
      `Basic ${token}`,
    ]) {
      expect(tokenMatches(token, header)).toBe(false);
    }
  });
});

describe('serviceTokenProblem', () => {
  test('distributed mode needs a token; embedded mode does not', () => {
    expect(serviceTokenProblem(undefined, false)).toMatch(/^SERVICE_TOKEN is required when DATABASE_URL is set/);
    expect(serviceTokenProblem(token, false)).toBeUndefined();
    expect(serviceTokenProblem(undefined, true)).toBeUndefined();
  });
});
