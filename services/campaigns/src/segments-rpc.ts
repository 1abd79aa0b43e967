import type { Client } from '@connectrpc/connect';
import { AppError } from '@svc/lib/errors';
import type { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import type { SegmentsPort } from './domain/ports.js';

/** The segments service as the campaigns domain's SegmentsPort. */
export function segmentsPort(segments: Client<typeof SegmentsService>): SegmentsPort {
  return {
    async exists(projectId, segmentId) {
      try {
        await segments.getSegment({ projectId, id: segmentId });
        return true;
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return false;
        throw err;
      }
    },
    async existsUnlessDeleting(projectId, segmentId) {
      try {
        await segments.getSegment({ projectId, id: segmentId, unlessDeleting: true });
        return true;
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return false;
        throw err;
      }
    },
  };
}
