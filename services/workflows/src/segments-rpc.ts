import type { Client } from '@connectrpc/connect';
import { isAppError } from '@svc/lib/errors';
import type { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import type { SegmentChecksPort } from './domain/ports.js';

/** The segments service as the workflows domain's SegmentChecksPort (GetSegment by slug, unless_deleting). */
export function segmentChecksPort(segments: Client<typeof SegmentsService>): SegmentChecksPort {
  return {
    async segmentExistsUnlessDeleting(projectId, slug) {
      try {
        await segments.getSegment({ projectId, slug, unlessDeleting: true });
        return true;
      } catch (err) {
        if (isAppError(err) && err.status === 404) return false;
        throw err;
      }
    },
  };
}
