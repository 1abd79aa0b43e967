import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { withTransaction } from '@svc/lib/db';
import {
  AppError,
  badRequest,
  conflict,
  flatBadRequest,
  notFound,
  validationError,
  type FieldError,
} from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { parseOrThrow } from '@svc/lib/zod-errors';
import type { TemplateFields, TemplateRow, TemplatesStore, TemplateType } from '../store/templates-store.js';
import { addressSchema, isValidEmail, type AddressInput } from './address.js';
import { bodySchema, MAX_SUBJECT_CHARS } from './content-limits.js';
import { namedSortColumn, offsetPage, totalPages } from '@svc/lib/pagination';
import type { Renderer } from './render.js';
import type { SenderDomains } from './sender-domains.js';

export const TEMPLATE_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const;

const LINE_BREAK = /[\r\n]/;
const oneLine = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !LINE_BREAK.test(s), {
      message: 'Must not contain line breaks',
      params: { code: 'invalid_string' },
    });
const email = z
  .string()
  .trim()
  .refine(isValidEmail, { message: 'Invalid email', params: { code: 'invalid_string' } });
/** null or '' clears an optional text field. */
const clearable = <T extends z.ZodTypeAny>(schema: T) =>
  z.union([z.literal(''), z.null(), schema]).transform((v) => (v === null ? '' : v) as string);

const fields = {
  name: z.string().trim().min(1).max(200),
  description: clearable(z.string().max(2000)),
  subject: oneLine(MAX_SUBJECT_CHARS).pipe(z.string().min(1)),
  body: bodySchema,
  from: addressSchema,
  fromName: clearable(oneLine(200)),
  replyTo: clearable(email),
  type: z.enum(TEMPLATE_TYPES),
};

const createSchema = z.object({
  ...fields,
  description: fields.description.optional(),
  fromName: fields.fromName.optional(),
  replyTo: fields.replyTo.optional(),
  type: fields.type.default('MARKETING'),
});

const updateSchema = z.object(fields).partial();

/** The TemplateFields message as the service receives it; an empty description, fromName or replyTo clears it. */
export interface TemplateInput {
  name?: string;
  description?: string;
  subject?: string;
  body?: string;
  from?: AddressInput;
  fromName?: string;
  replyTo?: string;
  type?: string;
}

export interface TemplateListQuery {
  page?: string;
  pageSize?: string;
  type?: string;
  search?: string;
  sort?: string;
  dir?: string;
}

export interface TemplatePage {
  rows: TemplateRow[];
  total: number;
  page: number;
  pageSize: number;
  totalPages: number;
}

const missing = (v: AddressInput | undefined) => v === undefined || v === '';

const previewSchema = z.object({ subject: z.string().max(MAX_SUBJECT_CHARS), body: bodySchema });

/** The workflows service, asked before a template is deleted. */
export interface TemplateUsagePort {
  /** The SEND_EMAIL steps that send the template, read once the step writes naming it under way are done. */
  stepsSending(projectId: string, templateId: string): Promise<{ workflowId: string; stepId: string }[]>;
}

const templateNotFound = (id: string) => notFound('Template', id, 'TEMPLATE_NOT_FOUND');

/** Templates: SPEC.md "Templates" and the Template resource. */
export class Templates {
  constructor(
    private readonly store: TemplatesStore,
    private readonly domains: SenderDomains,
    private readonly renderer: Renderer,
    private readonly usage?: TemplateUsagePort,
  ) {}

  async list(projectId: string, q: TemplateListQuery): Promise<TemplatePage> {
    const { page, pageSize, offset } = offsetPage(q.page, q.pageSize);
    let type: TemplateType | undefined;
    if (q.type) {
      const upper = q.type.toUpperCase();
      if (!(TEMPLATE_TYPES as readonly string[]).includes(upper)) {
        throw badRequest(`type must be one of ${TEMPLATE_TYPES.join(', ')}`, { parameter: 'type', received: q.type });
      }
      type = upper as TemplateType;
    }
    const { rows, total } = await this.store.page(projectId, {
      type,
      search: q.search?.trim() || undefined,
      sort: namedSortColumn(q.sort),
      dir: q.dir === 'asc' ? 'asc' : 'desc',
      limit: pageSize,
      offset,
    });
    return { rows, total, page, pageSize, totalPages: totalPages(total, pageSize) };
  }

  async create(projectId: string, input: TemplateInput): Promise<TemplateRow> {
    // SPEC.md: "Missing from returns 400 with a flat error."
    if (missing(input.from)) throw flatBadRequest('from is required: a sender address on a verified domain');
    const t = parseOrThrow(createSchema, input);
    const fieldsToStore: TemplateFields = {
      name: t.name,
      description: t.description ?? '',
      subject: t.subject,
      body: t.body,
      from_email: t.from.email,
      from_name: t.fromName || t.from.name || '',
      reply_to: t.replyTo ?? '',
      type: t.type,
    };
    this.checkSyntax(fieldsToStore);
    await this.domains.requireVerifiedSender(projectId, fieldsToStore.from_email);
    return this.store.insert(randomUUID(), projectId, fieldsToStore);
  }

  /**
   * A draft's subject and body rendered with sample variables, as a recipient would see them (the
   * console's live preview). A Liquid error in either field is a 422 naming the field, with liquidjs'
   * `line:N, col:M` in the message; both fields are checked so both errors show at once.
   */
  async preview(draft: { subject: string; body: string }, vars: Record<string, unknown>) {
    const input = parseOrThrow(previewSchema, draft);
    const budget = this.renderer.budget();
    const errors: FieldError[] = [];
    const render = async (template: string, field: 'subject' | 'body') => {
      try {
        const compiled = this.renderer.compile(template, { field, kind: field === 'subject' ? 'text' : 'html' });
        return await compiled.render({ ...vars }, budget);
      } catch (err) {
        if (!(err instanceof AppError) || !err.errors) throw err;
        errors.push(...err.errors);
        return '';
      }
    };
    const subject = await render(input.subject, 'subject');
    const body = await render(input.body, 'body');
    if (errors.length) throw validationError(errors, 'Invalid template');
    return { subject, body };
  }

  async get(projectId: string, id: string): Promise<TemplateRow> {
    const row = isUuid(id) ? await this.store.get(projectId, id) : null;
    if (!row) throw notFound('Template', id, 'TEMPLATE_NOT_FOUND');
    return row;
  }

  async update(projectId: string, id: string, input: TemplateInput): Promise<TemplateRow> {
    const current = await this.get(projectId, id);
    const t = parseOrThrow(updateSchema, input);
    const patch: Partial<TemplateFields> = {
      name: t.name,
      description: t.description,
      subject: t.subject,
      body: t.body,
      from_email: t.from?.email,
      from_name: t.fromName ?? (t.from?.name || undefined),
      reply_to: t.replyTo,
      type: t.type,
    };
    this.checkSyntax({ ...current, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) });
    if (patch.from_email && patch.from_email.toLowerCase() !== current.from_email.toLowerCase()) {
      await this.domains.requireVerifiedSender(projectId, patch.from_email);
    }
    const row = await this.store.update(projectId, id, patch);
    if (!row) throw notFound('Template', id, 'TEMPLATE_NOT_FOUND');
    return row;
  }

  /**
   * As `get`, for a caller about to start using the template in a transaction of its own (a workflow step saved):
   * 409 at once while a DELETE of it is under way. That DELETE waits for the caller's transaction (FindWorkflowsUsing
   * with `settled`) and would see its use: the caller gives up instead of waiting for it in turn.
   */
  async getUnlessDeleting(projectId: string, id: string): Promise<TemplateRow> {
    const row = isUuid(id) ? await this.store.getUnlessDeleting(projectId, id) : null;
    if (row === 'deleting') throw conflict(`Template ${id} is being deleted`, { templateId: id });
    if (!row) throw templateNotFound(id);
    return row;
  }

  /**
   * A template a workflow's SEND_EMAIL step uses stays (409 naming the steps): those steps would fail. The row is
   * locked from the check to the delete: a step that comes to name it meanwhile is either listed (workflows waits
   * for its write) or refused (the template is being deleted, or gone).
   */
  async delete(projectId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw templateNotFound(id);
    await withTransaction(this.store.pool, async (tx) => {
      if (!(await this.store.lockForDelete(tx, projectId, id))) throw templateNotFound(id);
      const steps = (await this.usage?.stepsSending(projectId, id)) ?? [];
      if (steps.length)
        throw conflict('Workflow steps send this template: change or delete them first', { workflows: steps });
      await this.store.delete(projectId, id, tx);
    });
  }

  async duplicate(projectId: string, id: string): Promise<TemplateRow> {
    const t = await this.get(projectId, id);
    return this.store.insert(randomUUID(), projectId, { ...t, name: `${t.name} (copy)`.slice(0, 200) });
  }

  /** A campaign's subject and body checked as a template's are when saved: a 422 naming each that does not parse. */
  parse(draft: { subject: string; body: string }): void {
    const input = parseOrThrow(previewSchema, draft);
    const errors: FieldError[] = [];
    for (const field of ['subject', 'body'] as const) {
      try {
        this.renderer.validate(input[field], { field });
      } catch (err) {
        if (!(err instanceof AppError) || !err.errors) throw err;
        errors.push(...err.errors);
      }
    }
    if (errors.length) throw validationError(errors, 'Invalid template');
  }

  /** A template that does not parse is refused when saved, not when sent. */
  private checkSyntax(t: Pick<TemplateFields, 'subject' | 'body'>): void {
    this.renderer.validate(t.subject, { field: 'subject' });
    this.renderer.validate(t.body, { field: 'body' });
  }
}
