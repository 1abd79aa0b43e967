import type { Client } from '@connectrpc/connect';
import express, { type Router } from 'express';
import { billingPeriod } from '@svc/lib/billing-caps';
import { AppError, badRequest, conflict, forbidden, notFound, validationError, type FieldError } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { BillingLimits } from '@svc/proto/svc/identity/v1/billing_pb';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Authenticator } from '../http/auth.js';
import { objectBody } from '../http/body.js';
import { type PaymentProvider, SignatureError } from '../billing/payment-provider.js';
import { z } from 'zod';
import { ApiRouter, id, isoDate } from '../http/api.js';

const cap = z.number().int().min(0).nullable().openapi({ description: 'null: unlimited' });
const Limits = z.object({ emails: cap, contacts: cap, events: cap }).openapi('BillingLimits');
const Line = z.object({ used: z.number().int(), limit: cap, remaining: z.number().int().nullable() });
const Consumption = z.object({
  projectId: id,
  period: z.object({ start: isoDate, end: isoDate }),
  emails: Line,
  contacts: Line,
  events: Line,
  subscription: z
    .object({
      provider: z.string(),
      status: z.string().nullable(),
      customerId: z.string().nullable(),
      subscriptionId: z.string().nullable(),
      updatedAt: isoDate.nullable(),
    })
    .nullable(),
});
const Invoice = z.object({
  id: z.string(),
  number: z.string().nullable(),
  status: z.string().nullable(),
  amountDue: z.number().int().openapi({ description: 'Smallest currency unit (cents)' }),
  amountPaid: z.number().int(),
  currency: z.string(),
  createdAt: isoDate,
  periodStart: isoDate.nullable(),
  periodEnd: isoDate.nullable(),
  hostedInvoiceUrl: z.string().nullable(),
  pdfUrl: z.string().nullable(),
});
const PROJECT = z.object({ id: id.openapi({ description: 'Project id' }) });
const billing = (summary: string) => ({ summary, tag: 'Billing', auth: 'session' as const, params: PROJECT });

export interface BillingSources {
  identity: Client<typeof IdentityService>;
  messaging: Client<typeof MessagingService>;
  contacts: Client<typeof ContactsService>;
}

const CATEGORIES = ['emails', 'contacts', 'events'] as const;
type Category = (typeof CATEGORIES)[number];

const limitsJson = (l: BillingLimits | undefined) =>
  Object.fromEntries(CATEGORIES.map((c) => [c, l?.[c] === undefined ? null : Number(l[c])])) as Record<
    Category,
    number | null
  >;

const notConfigured = (what: string) =>
  new AppError({
    code: 'PAYMENT_PROVIDER_NOT_CONFIGURED',
    status: 501,
    message: `No payment provider is configured: ${what} needs STRIPE_SECRET_KEY on this deployment`,
  });

/**
 * Billing (README "Billing"), session-authenticated: caps, consumption counted from the services' records,
 * and the payment provider's checkout, portal and invoices. Another user's project is a 404 (identity).
 */
export function billingRouter(
  sources: BillingSources,
  auth: Authenticator,
  provider: PaymentProvider | undefined,
  publicUrl: string,
): Router {
  const r = new ApiRouter();
  const session = auth.session();
  const { identity, messaging, contacts } = sources;
  const billingOf = (userId: string, projectId: string) => identity.getBillingLimits({ userId, projectId });

  r.get(
    '/users/@me/projects/:id/billing-limits',
    { ...billing('Usage caps of a project'), responses: { 200: Limits }, errors: [404] },
    session,
    async (req, res) => {
      res.json(limitsJson((await billingOf(req.userId, String(req.params.id))).limits));
    },
  );

  // Each category sent is set (null: unlimited); categories not sent keep their cap.
  r.put(
    '/users/@me/projects/:id/billing-limits',
    {
      ...billing('Set caps (each category sent; null: unlimited; others kept)'),
      body: Limits.partial(),
      responses: { 200: Limits },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))
        throw badRequest('The body must be a JSON object such as {"emails": 10000, "contacts": null}');
      const body = objectBody(req.body);
      const errors: FieldError[] = [];
      const limits: Partial<Record<Category, bigint>> = {};
      const clear: Partial<Record<Category, boolean>> = {};
      for (const [key, value] of Object.entries(body)) {
        if (!(CATEGORIES as readonly string[]).includes(key)) {
          errors.push({ field: key, code: 'unrecognized_key', message: 'Known categories: emails, contacts, events' });
        } else if (value === null) {
          clear[key as Category] = true;
        } else if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
          errors.push({
            field: key,
            code: 'invalid_type',
            message: 'Expected null (unlimited) or a whole number of at least 0',
            received: value,
          });
        } else {
          limits[key as Category] = BigInt(value);
        }
      }
      if (errors.length) throw validationError(errors);
      const out = await identity.setBillingLimits({
        userId: req.userId,
        projectId: String(req.params.id),
        limits,
        clearEmails: clear.emails ?? false,
        clearContacts: clear.contacts ?? false,
        clearEvents: clear.events ?? false,
      });
      res.json(limitsJson(out.limits));
    },
  );

  r.get(
    '/users/@me/projects/:id/billing-consumption',
    {
      ...billing('Consumption of the current billing period against the caps'),
      responses: { 200: Consumption },
      errors: [404],
    },
    session,
    async (req, res) => {
      const billing = await billingOf(req.userId, String(req.params.id));
      const projectId = String(req.params.id);
      const period = billingPeriod();
      const since = timestampFromDate(period.start);
      const [emails, held] = await Promise.all([
        messaging.getEmailUsage({ projectId, since }),
        contacts.getContactsUsage({ projectId, since }),
      ]);
      const limits = limitsJson(billing.limits);
      const line = (used: number, limit: number | null) => ({
        used,
        limit,
        remaining: limit === null ? null : Math.max(0, limit - used),
      });
      const a = billing.account;
      res.json({
        projectId,
        period: { start: period.start.toISOString(), end: period.end.toISOString() },
        emails: line(Number(emails.emails), limits.emails),
        contacts: line(Number(held.contacts), limits.contacts),
        events: line(Number(held.events), limits.events),
        subscription: a?.provider
          ? {
              provider: a.provider,
              status: a.status || null,
              customerId: a.customerId || null,
              subscriptionId: a.subscriptionId || null,
              updatedAt: a.updatedAt ? new Date(Number(a.updatedAt.seconds) * 1000).toISOString() : null,
            }
          : null,
      });
    },
  );

  r.get(
    '/users/@me/projects/:id/billing-invoices',
    {
      ...billing("The payment provider's invoices of the project"),
      responses: { 200: z.object({ data: z.array(Invoice) }) },
      errors: [404, 501],
    },
    session,
    async (req, res) => {
      const billing = await billingOf(req.userId, String(req.params.id));
      if (!provider?.api) throw notConfigured('listing invoices');
      const customerId = billing.account?.provider === provider.name ? billing.account.customerId : '';
      res.json({ data: customerId ? await provider.api.invoices(customerId) : [] });
    },
  );

  r.post(
    '/users/@me/projects/:id/checkout',
    {
      ...billing('Start a checkout with the payment provider (owners and admins)'),
      body: z.object({
        priceId: z.string().optional(),
        successUrl: z.string().url().optional(),
        cancelUrl: z.string().url().optional(),
      }),
      bodyRequired: false,
      responses: { 201: z.object({ id: z.string(), url: z.string().url() }) },
      errors: [403, 404, 501],
    },
    session,
    async (req, res) => {
      const projectId = String(req.params.id);
      const billing = await billingOf(req.userId, projectId);
      if (!billing.canManage) throw forbidden('Only owners and admins manage billing', 'PROJECT_ACCESS_DENIED');
      if (!provider?.api) throw notConfigured('a checkout');
      const body = objectBody(req.body ?? {});
      const priceId = typeof body.priceId === 'string' && body.priceId ? body.priceId : provider.defaultPriceId;
      if (!priceId) {
        throw validationError([
          { field: 'priceId', code: 'required', message: 'priceId is required (no STRIPE_PRICE_ID is configured)' },
        ]);
      }
      const project = (await identity.getProject({ userId: req.userId, projectId })).project!;
      const back = `${publicUrl}/`;
      const session = await provider.api.checkout({
        projectId,
        projectName: project.name,
        customerId: billing.account?.provider === provider.name ? billing.account.customerId || undefined : undefined,
        priceId,
        successUrl: typeof body.successUrl === 'string' && body.successUrl ? body.successUrl : back,
        cancelUrl: typeof body.cancelUrl === 'string' && body.cancelUrl ? body.cancelUrl : back,
      });
      res.status(201).json(session);
    },
  );

  r.post(
    '/users/@me/projects/:id/billing-portal',
    {
      ...billing("Open the payment provider's billing portal (owners and admins)"),
      body: z.object({ returnUrl: z.string().url().optional() }),
      bodyRequired: false,
      responses: { 201: z.object({ url: z.string().url() }) },
      errors: [403, 404, 409, 501],
    },
    session,
    async (req, res) => {
      const billing = await billingOf(req.userId, String(req.params.id));
      if (!billing.canManage) throw forbidden('Only owners and admins manage billing', 'PROJECT_ACCESS_DENIED');
      if (!provider?.api) throw notConfigured('the billing portal');
      const customerId = billing.account?.provider === provider.name ? billing.account.customerId : '';
      if (!customerId) throw conflict('The project has no billing account yet: complete a checkout first');
      const body = objectBody(req.body ?? {});
      const returnUrl = typeof body.returnUrl === 'string' && body.returnUrl ? body.returnUrl : `${publicUrl}/`;
      res.status(201).json(await provider.api.portal(customerId, returnUrl));
    },
  );

  return r.router;
}

/**
 * POST /webhooks/incoming/{payment_provider}: the raw body is read here (before the JSON parser) because the
 * signature covers its exact bytes. A forged or missing signature is 400 and changes nothing; an event about
 * no known project is acknowledged (200) so the provider stops retrying it.
 */
export function paymentWebhookRouter(
  identity: Client<typeof IdentityService>,
  provider: PaymentProvider | undefined,
  logger: Logger,
): Router {
  const r = new ApiRouter();
  r.post(
    '/webhooks/incoming/:provider',
    {
      summary: 'Payment provider notifications (Stripe; the signature header authenticates the raw body)',
      tag: 'Billing',
      auth: 'none',
      body: z.record(z.unknown()).openapi({ description: "The provider's signed event" }),
      responses: {
        200: z.object({ received: z.literal(true), processed: z.number().int(), ignored: z.number().int() }),
      },
      errors: [400, 404, 501],
    },
    express.raw({ type: () => true, limit: '1mb' }),
    async (req, res) => {
      const name = String(req.params.provider);
      if (name !== 'stripe') throw notFound('Payment provider', name);
      if (!provider?.verify) {
        throw new AppError({
          code: 'PAYMENT_PROVIDER_NOT_CONFIGURED',
          status: 501,
          message: 'No payment provider webhook is configured: set STRIPE_WEBHOOK_SECRET',
        });
      }
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      let notes: ReturnType<NonNullable<PaymentProvider['verify']>>;
      try {
        notes = provider.verify(raw, req.headers);
      } catch (err) {
        if (!(err instanceof SignatureError)) throw badRequest('The payload is not a valid event');
        throw new AppError({
          code: 'INVALID_SIGNATURE',
          status: 400,
          message: `Signature check failed: ${err.message}`,
        });
      }
      let applied = 0;
      for (const n of notes) {
        const out = await identity.recordBillingAccount({
          provider: provider.name,
          projectId: n.projectId ?? '',
          customerId: n.customerId ?? '',
          subscriptionId: n.subscriptionId ?? '',
          status: n.status ?? '',
        });
        if (out.applied) applied++;
        else logger.info({ eventId: n.eventId, type: n.type }, 'payment webhook: no project matches; ignored');
      }
      res.json({ received: true, processed: applied, ignored: notes.length - applied });
    },
  );
  return r.router;
}
