import { validationError } from '@svc/lib/errors';
import { isReservedEventName } from '@svc/lib/event-names';

const MAX_NAME_LENGTH = 255;

export function checkTrackableEventName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') {
    throw validationError([
      {
        field: 'event',
        message: 'event is required',
        code: typeof name === 'string' ? 'too_small' : 'invalid_type',
        received: name,
      },
    ]);
  }
  if (name.length > MAX_NAME_LENGTH || /[\r\n\0]/.test(name)) {
    throw validationError([
      {
        field: 'event',
        message: `event must be at most ${MAX_NAME_LENGTH} characters without line breaks`,
        code: 'invalid_string',
      },
    ]);
  }
  if (isReservedEventName(name)) {
    throw validationError([
      {
        field: 'event',
        message: `"${name}" is a reserved event name emitted by the platform`,
        code: 'reserved_event',
        received: name,
      },
    ]);
  }
  return name;
}
