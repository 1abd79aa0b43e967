import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import type { SuspensionAuthority } from './domain/sending-suspension.js';

/** Identity as the authority over project suspensions (internal calls: no user). */
export function suspensionAuthority(
  identity: Pick<Client<typeof IdentityService>, 'getProjectSuspensions' | 'suspendProject'>,
): SuspensionAuthority {
  return {
    async state(projectId) {
      const { active, history, projectDeleted } = await identity.getProjectSuspensions({ projectId });
      const lifted = history.find((s) => s.liftedAt);
      return {
        active: active
          ? {
              id: active.id,
              metric: active.metric,
              rate: active.rate,
              threshold: active.threshold,
              reason: active.reason,
              suspendedAt: active.suspendedAt ? timestampDate(active.suspendedAt) : new Date(),
            }
          : null,
        lastLiftedAt: lifted?.liftedAt ? timestampDate(lifted.liftedAt) : null,
        deleted: projectDeleted,
      };
    },
    async suspend(projectId, v) {
      await identity.suspendProject({ projectId, ...v, sent: BigInt(v.sent) });
    },
  };
}
