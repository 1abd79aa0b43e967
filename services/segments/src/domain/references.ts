import { badRequest } from '@svc/lib/errors';

/** As the filter tree allows (lib/src/filter-tree.ts): a field string up to 1,000 characters. */
const MAX_REFERENCE_LENGTH = 1000;

/** What a filter's `field` must be to reference a contact field or an event (FindSegmentsUsing). */
export interface FilterReference {
  exact: string[];
  /** Fields below it also reference it (data.profile -> data.profile.tier); null: none. */
  prefix: string | null;
}

/**
 * A contact field (`email`, ..., `data.<path>`) is referenced by filters on it, a data path also by filters on paths
 * below it; an event name by `event.<name>` filters, and an `email.<activity>` name also by the `email.<activity>`
 * filters that read the same lifecycle. Exactly one of the two must be given (400 otherwise).
 */
export function filterReference(ref: { field?: string; eventName?: string }): FilterReference {
  const given = [ref.field, ref.eventName].filter((v) => v !== undefined);
  if (given.length !== 1) throw badRequest('Give exactly one of field and event_name');
  const value = given[0] as string;
  if (value.trim() === '' || value.length > MAX_REFERENCE_LENGTH)
    throw badRequest(`A field or event name is 1 to ${MAX_REFERENCE_LENGTH} characters`);
  // Only custom data nests: `email.open` is an email activity, not a path below the standard field `email`.
  if (ref.field !== undefined) return { exact: [value], prefix: value.startsWith('data.') ? `${value}.` : null };
  return { exact: value.startsWith('email.') ? [`event.${value}`, value] : [`event.${value}`], prefix: null };
}
