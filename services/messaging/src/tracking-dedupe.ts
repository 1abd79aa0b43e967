import { FailOpenRateLimiter, MemoryRateLimiter, RedisRateLimiter } from '@svc/lib/rate-limit';
import type { RedisLink } from '@svc/lib/redis';
import type { MessagingConfig as Config } from './config.js';
import { TrackingHits } from './domain/tracking-hits.js';

/**
 * Which opens and clicks are recorded (README "Tracking"): the marks and the per-client budget are shared by every
 * messaging replica through Redis when REDIS_URL is set (keys `<BUS_PREFIX>:th:*`), else in-process; while Redis is
 * down each replica decides alone.
 */
export function trackingHits(config: Config, redis: RedisLink | undefined): TrackingHits {
  const policy = config.trackingHits;
  if (!redis) return new TrackingHits(new MemoryRateLimiter(), policy);
  return new TrackingHits(new FailOpenRateLimiter(new RedisRateLimiter(redis, `${config.busPrefix}:th`)), policy);
}
