import type { Queryable } from '@svc/lib/db';
import { validationError } from '@svc/lib/errors';
import type { FieldsStore } from '../store/fields-store.js';
import type { FieldType } from './type-inference.js';
import { pathWithinLimits } from './custom-data.js';

/**
 * Distinct custom fields (`data.<path>` leaves) a project may have. Bounds GET /contacts/fields,
 * type inference and every audience picker; fields that exist keep working past it.
 */
export const MAX_CUSTOM_FIELDS = 500;

export const tooManyFields = () =>
  validationError([
    {
      field: 'data',
      code: 'too_many_fields',
      message:
        `A project may have at most ${MAX_CUSTOM_FIELDS} custom fields; ` +
        'delete unused ones (DELETE /contacts/fields/data.<key>) first',
    },
  ]);

/**
 * Records the types of fields seen for the first time, inside the write's transaction. A write
 * that would take the project past MAX_CUSTOM_FIELDS is refused (422), which rolls it back whole.
 */
export async function recordNewFields(
  store: FieldsStore,
  tx: Queryable,
  projectId: string,
  types: Array<{ path: string; type: FieldType }>,
): Promise<void> {
  if (!types.length) return;
  await store.lockFieldCreation(tx, projectId);
  const added = await store.record(tx, projectId, types);
  if (added > 0 && (await store.count(tx, projectId)) > MAX_CUSTOM_FIELDS) throw tooManyFields();
}

const STANDARD = [
  { field: 'email', type: 'string' },
  { field: 'subscribed', type: 'boolean' },
  { field: 'createdAt', type: 'date' },
  { field: 'updatedAt', type: 'date' },
] as const;

type FieldRef = { standard: 'email' | 'subscribed' | 'createdAt' | 'updatedAt' } | { path: string[] };

/** `email`, `subscribed`, `createdAt`, `updatedAt`, or `data.<dot.path>`. */
export function parseFieldRef(field: string): FieldRef {
  const std = STANDARD.find((s) => s.field === field);
  if (std) return { standard: std.field };
  const path = field.startsWith('data.') ? field.slice(5).split('.') : [];
  if (!path.length || path.some((p) => p === '')) {
    throw validationError([
      { field: 'field', message: 'Use a standard field or data.<key>', code: 'invalid_field', received: field },
    ]);
  }
  return { path };
}

export class Fields {
  constructor(private readonly store: FieldsStore) {}

  /** Standard fields always; custom ones as `data.<path>` with their inferred type and coverage. */
  async list(projectId: string) {
    const types = await this.store.types(projectId);
    const { total, counts } = await this.store.coverage(
      projectId,
      types.map((t) => t.path),
    );
    return [
      ...STANDARD.map((s) => ({ field: s.field, type: s.type, isCustom: false, coverage: total ? 1 : 0 })),
      // A field no contact holds any more (every value removed) is not listed.
      ...types.flatMap((t, i) =>
        counts[i] > 0 ? [{ field: `data.${t.path}`, type: t.type, isCustom: true, coverage: counts[i] / total }] : [],
      ),
    ];
  }

  async values(projectId: string, field: string, limit: number) {
    const ref = parseFieldRef(field);
    // A path past custom data's limits (more than 10 keys, say) names no stored value.
    if ('path' in ref) return pathWithinLimits(ref.path) ? this.store.values(projectId, ref.path, limit) : [];
    if (ref.standard === 'email' || ref.standard === 'subscribed')
      return this.store.standardValues(projectId, ref.standard, limit);
    throw validationError([
      {
        field: 'field',
        message: 'Values are listed for email, subscribed and data fields',
        code: 'invalid_field',
        received: field,
      },
    ]);
  }

  async remove(projectId: string, field: string): Promise<number> {
    const ref = parseFieldRef(field);
    if (!('path' in ref)) {
      throw validationError([
        { field: 'field', message: 'Standard fields cannot be deleted', code: 'invalid_field', received: field },
      ]);
    }
    return pathWithinLimits(ref.path) ? this.store.deleteField(projectId, ref.path) : 0;
  }
}
