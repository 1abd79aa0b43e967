import { conflict } from '@svc/lib/errors';
import type { CampaignStatus } from '../store/campaign-row.js';

/** The moves a client can ask for; the scheduler's own (SCHEDULED -> SENDING -> SENT) are not requests. */
export type CampaignAction = 'update' | 'send' | 'cancel' | 'delete';

/**
 * Which state each requested move may start from (README "Campaign states"):
 * - update (PUT) and send: DRAFT only;
 * - cancel: SCHEDULED (back to DRAFT, scheduledFor cleared) or SENDING (to CANCELLED, terminal);
 * - delete: anything but SENDING (a SCHEDULED campaign is simply never sent).
 */
export const ALLOWED_FROM: Record<CampaignAction, readonly CampaignStatus[]> = {
  update: ['DRAFT'],
  send: ['DRAFT'],
  cancel: ['SCHEDULED', 'SENDING'],
  delete: ['DRAFT', 'SCHEDULED', 'SENT', 'CANCELLED'],
};

const VERB: Record<CampaignAction, string> = {
  update: 'edited',
  send: 'sent',
  cancel: 'cancelled',
  delete: 'deleted',
};

export const allowed = (action: CampaignAction, status: CampaignStatus) => ALLOWED_FROM[action].includes(status);

/** The 409 of a move the current state does not allow; its message names the state. */
export function notAllowed(action: CampaignAction, status: CampaignStatus) {
  const from = ALLOWED_FROM[action].join(' or ');
  return conflict(`A ${status} campaign cannot be ${VERB[action]} (only a ${from} campaign can)`, {
    status,
    allowedFrom: [...ALLOWED_FROM[action]],
  });
}
