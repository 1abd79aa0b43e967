import Stripe from 'stripe';
import type { BillingNotification, Invoice, PaymentProvider } from './payment-provider.js';
import { SignatureError } from './payment-provider.js';

export interface StripeSettings {
  secretKey?: string;
  webhookSecret?: string;
  priceId?: string;
}

const iso = (seconds: number | null | undefined) => (seconds ? new Date(seconds * 1000).toISOString() : null);
const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? undefined));

/**
 * Stripe as the payment provider: Checkout in subscription mode (the project id travels as
 * client_reference_id and subscription metadata), the customer portal, invoices, and webhooks whose
 * signature is checked with the official library's `webhooks.constructEvent`.
 */
export function stripeProvider(s: StripeSettings): PaymentProvider | undefined {
  if (!s.secretKey && !s.webhookSecret) return undefined;
  const stripe = s.secretKey ? new Stripe(s.secretKey) : undefined;
  const webhooks = stripe?.webhooks ?? Stripe.webhooks;
  return {
    name: 'stripe',
    defaultPriceId: s.priceId,
    api: stripe && {
      async checkout(input) {
        const session = await stripe.checkout.sessions.create({
          mode: 'subscription',
          line_items: [{ price: input.priceId, quantity: 1 }],
          client_reference_id: input.projectId,
          ...(input.customerId ? { customer: input.customerId } : {}),
          metadata: { projectId: input.projectId },
          subscription_data: { metadata: { projectId: input.projectId }, description: input.projectName },
          success_url: input.successUrl,
          cancel_url: input.cancelUrl,
        });
        return { id: session.id, url: session.url ?? '' };
      },
      async portal(customerId, returnUrl) {
        const session = await stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl });
        return { url: session.url };
      },
      async invoices(customerId) {
        const list = await stripe.invoices.list({ customer: customerId, limit: 100 });
        return list.data.map(
          (i): Invoice => ({
            id: i.id ?? '',
            number: i.number ?? null,
            status: i.status ?? null,
            amountDue: i.amount_due,
            amountPaid: i.amount_paid,
            currency: i.currency,
            createdAt: iso(i.created)!,
            periodStart: iso(i.period_start),
            periodEnd: iso(i.period_end),
            hostedInvoiceUrl: i.hosted_invoice_url ?? null,
            pdfUrl: i.invoice_pdf ?? null,
          }),
        );
      },
    },
    verify: s.webhookSecret
      ? (rawBody, headers) => {
          const signature = headers['stripe-signature'];
          if (typeof signature !== 'string' || !signature) throw new SignatureError('Missing Stripe-Signature header');
          let event: Stripe.Event;
          try {
            event = webhooks.constructEvent(rawBody, signature, s.webhookSecret!);
          } catch (err) {
            throw new SignatureError((err as Error).message);
          }
          return notifications(event);
        }
      : undefined,
  };
}

/** The events that change a project's subscription; any other event is acknowledged and ignored. */
function notifications(event: Stripe.Event): BillingNotification[] {
  const base = { eventId: event.id, type: event.type };
  switch (event.type) {
    case 'checkout.session.completed': {
      const o = event.data.object;
      const projectId = o.client_reference_id ?? o.metadata?.projectId;
      if (!projectId) return [];
      return [
        {
          ...base,
          projectId,
          customerId: idOf(o.customer),
          subscriptionId: idOf(o.subscription),
          status: o.payment_status === 'paid' || o.payment_status === 'no_payment_required' ? 'active' : 'incomplete',
        },
      ];
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const o = event.data.object;
      return [
        {
          ...base,
          projectId: o.metadata?.projectId || undefined,
          customerId: idOf(o.customer),
          subscriptionId: o.id,
          status: event.type === 'customer.subscription.deleted' ? 'canceled' : o.status,
        },
      ];
    }
    default:
      return [];
  }
}
