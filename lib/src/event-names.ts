// SPEC.md: the event names the platform records itself and clients cannot track.

const SEGMENT_MEMBERSHIP = /^segment\.[^.]+\.(entry|exit)$/;

/** `email.*`, `contact.subscribed`, `contact.unsubscribed`, `segment.<slug>.entry` and `segment.<slug>.exit`. */
export function isReservedEventName(name: string): boolean {
  return (
    name.startsWith('email.') ||
    name === 'contact.subscribed' ||
    name === 'contact.unsubscribed' ||
    SEGMENT_MEMBERSHIP.test(name)
  );
}
