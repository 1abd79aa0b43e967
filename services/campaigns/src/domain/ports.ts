// Narrow edges to the other services (adapters in src/*-rpc.ts): what the campaigns domain needs of each.

/** A contact as the audience snapshot keeps it. */
export interface AudienceContact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

export interface ContactsPort {
  /** Counts an audience; 422 (fields under `condition`) for a tree the contacts service refuses, 400 for a cycle. */
  count(projectId: string, condition: unknown | undefined): Promise<number>;
  /** The audience in contact id order, after `afterId` (exclusive), in batches. */
  stream(
    projectId: string,
    condition: unknown | undefined,
    subscribedOnly: boolean,
    afterId: string | null,
  ): AsyncIterable<AudienceContact[]>;
  lookup(projectId: string, email: string): Promise<AudienceContact | null>;
}

export interface SegmentsPort {
  /** Whether the project has this segment (another project's id is no segment of this one). */
  exists(projectId: string, segmentId: string): Promise<boolean>;
  /** As `exists`, at once: 409 CONFLICT while a DELETE of the segment is under way (a send gives up, see `send`). */
  existsUnlessDeleting(projectId: string, segmentId: string): Promise<boolean>;
}

export interface EmailContent {
  subject: string;
  body: string;
  from: string;
  fromName: string;
  replyTo: string;
  type: string;
}

export interface QueueRecipient {
  contactId: string;
  email: string;
  subscribed: boolean;
  variables: Record<string, unknown>;
  /** Unique per project in messaging: a key queued before is not queued again ("duplicate"). */
  dedupeKey?: string;
}

export interface QueueResult {
  contactId: string;
  emailId: string;
  /** queued, suppressed, duplicate or failed. */
  status: string;
  error: string;
}

/** The email cap (README "Billing"), asked before a campaign starts. */
export interface EmailCapPort {
  /** Whether `emails` more messages fit under the project's email cap this month. */
  emailAllowance(projectId: string, emails: number): Promise<{ allowed: boolean; used: number; limit?: number }>;
}

/** Messaging's Liquid (with its `{{a ?? b}}` and `{{first name}}` forms), to refuse content that cannot render. */
export interface TemplateCheckPort {
  /** 422 (`errors` naming `subject` and/or `body`, code template_error) when either does not parse. */
  checkTemplates(projectId: string, subject: string, body: string): Promise<void>;
}

export interface MessagingPort {
  /** With `forSending`, a suspended project is refused (403 PROJECT_SUSPENDED) whatever the sender. */
  senderVerified(projectId: string, from: string, forSending?: boolean): Promise<boolean>;
  queue(
    projectId: string,
    content: EmailContent,
    recipients: QueueRecipient[],
    origin: { campaignId: string; test: boolean },
  ): Promise<QueueResult[]>;
}
