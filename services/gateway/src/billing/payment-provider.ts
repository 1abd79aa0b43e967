/** A payment provider behind the billing routes (README "Billing"); Stripe is the one implementation. */

export interface Invoice {
  id: string;
  number: string | null;
  status: string | null;
  /** Smallest currency unit (cents). */
  amountDue: number;
  amountPaid: number;
  currency: string;
  createdAt: string;
  periodStart: string | null;
  periodEnd: string | null;
  hostedInvoiceUrl: string | null;
  pdfUrl: string | null;
}

/** What a verified notification says about a project's subscription; by project or by the provider's customer. */
export interface BillingNotification {
  eventId: string;
  type: string;
  projectId?: string;
  customerId?: string;
  subscriptionId?: string;
  status?: string;
}

/** Calls to the provider's API: configured by its secret key. */
export interface PaymentApi {
  checkout(input: {
    projectId: string;
    projectName: string;
    customerId?: string;
    priceId: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<{ id: string; url: string }>;
  portal(customerId: string, returnUrl: string): Promise<{ url: string }>;
  invoices(customerId: string): Promise<Invoice[]>;
}

export interface PaymentProvider {
  /** The `{payment_provider}` of POST /webhooks/incoming/{payment_provider}. */
  readonly name: string;
  /** Undefined: no API key configured (checkout, portal and invoices answer 501). */
  readonly api?: PaymentApi;
  /** The default price of a checkout, if configured. */
  readonly defaultPriceId?: string;
  /** Undefined: no webhook secret configured (webhooks answer 501). Throws SignatureError on a bad signature. */
  readonly verify?: (rawBody: Buffer, headers: Record<string, string | string[] | undefined>) => BillingNotification[];
}

export class SignatureError extends Error {}
