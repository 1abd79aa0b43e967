/**
 * SPEC.md "Contact subscription": how a write changes `subscribed`.
 * - New contacts take the requested value, else the endpoint's default.
 * - `set` writes (POST/PATCH /contacts, /v1/send): a requested value applies; omitted keeps the state.
 * - `track` writes (/v1/track): omitted keeps the state and `false` never unsubscribes an existing
 *   contact (it only avoids resubscribing one); `true` resubscribes.
 */
export type WriteMode = 'set' | 'track';

export function nextSubscription(
  existing: boolean | undefined,
  requested: boolean | undefined,
  defaultValue: boolean,
  mode: WriteMode,
): boolean {
  if (existing === undefined) return requested ?? defaultValue;
  if (requested === undefined) return existing;
  if (mode === 'track') return requested ? true : existing;
  return requested;
}

/** The event a flip emits, or null when the state did not change. */
export function subscriptionEvent(
  before: boolean | undefined,
  after: boolean,
): 'contact.subscribed' | 'contact.unsubscribed' | null {
  if (before === undefined || before === after) return null;
  return after ? 'contact.subscribed' : 'contact.unsubscribed';
}
