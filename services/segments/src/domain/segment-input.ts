import { flatBadRequest, validationError, type FieldError } from '@svc/lib/errors';

export const MAX_NAME = 100;
export const MAX_DESCRIPTION = 500;
const TYPES = ['DYNAMIC', 'STATIC'] as const;
export type SegmentType = (typeof TYPES)[number];

export interface CreateInput {
  name: string;
  description?: string;
  type: string;
  condition?: unknown;
  trackMembership?: boolean;
}

export interface ValidCreate {
  name: string;
  description: string | null;
  type: SegmentType;
  /** null for STATIC: a condition sent with a static segment is ignored. */
  condition: unknown | null;
  trackMembership: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function nameErrors(name: string | undefined, required: boolean): FieldError[] {
  if (name === undefined) return required ? [{ field: 'name', message: 'name is required', code: 'invalid_type' }] : [];
  if (name.trim() === '')
    return [{ field: 'name', message: 'name must not be empty', code: 'too_small', received: name }];
  if (name.length > MAX_NAME)
    return [{ field: 'name', message: `name must be at most ${MAX_NAME} characters`, code: 'too_big' }];
  return [];
}

function descriptionErrors(description: string | undefined | null): FieldError[] {
  if (typeof description === 'string' && description.length > MAX_DESCRIPTION) {
    return [
      { field: 'description', message: `description must be at most ${MAX_DESCRIPTION} characters`, code: 'too_big' },
    ];
  }
  return [];
}

/** SPEC.md's rules for POST /segments; the condition's own shape is checked by the contacts service. */
export function validateCreate(input: CreateInput): ValidCreate {
  const type = (input.type || 'DYNAMIC') as SegmentType;
  const errors = [...nameErrors(input.name || undefined, true), ...descriptionErrors(input.description)];
  if (!TYPES.includes(type)) {
    errors.push({
      field: 'type',
      message: 'type must be DYNAMIC or STATIC',
      code: 'invalid_enum_value',
      received: input.type,
    });
  }
  if (errors.length) throw validationError(errors);
  if (type === 'DYNAMIC' && !isObject(input.condition))
    throw flatBadRequest('A dynamic segment requires a condition object');
  return {
    name: input.name,
    description: input.description ?? null,
    type,
    condition: type === 'DYNAMIC' ? input.condition : null,
    trackMembership: input.trackMembership ?? false,
  };
}

export interface PatchInput {
  name?: string;
  description?: string | null;
  condition?: unknown;
  trackMembership?: boolean;
}

/** PATCH: every field optional; a condition only on a DYNAMIC segment, and then an object. */
export function validatePatch(input: PatchInput, type: SegmentType): PatchInput {
  const errors = [...nameErrors(input.name, false), ...descriptionErrors(input.description)];
  if (input.condition !== undefined) {
    if (type === 'STATIC') {
      errors.push({ field: 'condition', message: 'a static segment has no condition', code: 'invalid_type' });
    } else if (!isObject(input.condition)) {
      errors.push({ field: 'condition', message: 'condition must be a filter tree object', code: 'invalid_type' });
    }
  }
  if (errors.length) throw validationError(errors);
  return input;
}
