/**
 * Where a message comes from decides when it is claimed (DESIGN.md decision 12): an API send
 * (password resets, receipts) before workflow steps before campaign fan-out.
 */
export const SEND_PRIORITY = {
  transactional: 0,
  workflow: 1,
  campaign: 2,
} as const;

export type SendSource = keyof typeof SEND_PRIORITY;
