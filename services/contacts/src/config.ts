import { z } from 'zod';
import type { Config } from '@svc/lib/config';

/** The contacts service's own environment variables (the platform-wide ones are in lib/src/config.ts). */
export const contactsEnv = z
  .object({
    /** Managed expression indexes on data paths that saved segments compare by range (0: none). */
    FILTER_INDEX_MAX: z.coerce.number().int().min(0).max(100).default(8),
  })
  .transform((e) => ({ filterIndexMax: e.FILTER_INDEX_MAX }));

export type ContactsEnv = z.output<typeof contactsEnv>;
export type ContactsConfig = Config & ContactsEnv;
