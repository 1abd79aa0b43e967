import { FailOpenRateLimiter, MemoryRateLimiter, RedisRateLimiter } from '@svc/lib/rate-limit';
import { FailOpenRecentMarks, MemoryRecentMarks, RedisRecentMarks } from '@svc/lib/recent-marks';
import type { RedisLink } from '@svc/lib/redis';
import type { MessagingConfig as Config } from './config.js';
import { AutomatedHits } from './domain/automated-hits.js';
import { TrackingHits } from './domain/tracking-hits.js';

/**
 * Which opens and clicks are recorded (README "Tracking"): the marks, the per-client budget and the burst marks of
 * automated hits are shared by every messaging replica through Redis when REDIS_URL is set (keys `<BUS_PREFIX>:th:*`),
 * else in-process; while Redis is down each replica decides alone.
 */
export function trackingHits(config: Config, redis: RedisLink | undefined): TrackingHits {
  const policy = config.trackingHits;
  if (!redis) return new TrackingHits(new MemoryRateLimiter(), policy);
  return new TrackingHits(new FailOpenRateLimiter(new RedisRateLimiter(redis, `${config.busPrefix}:th`)), policy);
}

export function automatedHits(config: Config, redis: RedisLink | undefined): AutomatedHits {
  const marks = redis ? new FailOpenRecentMarks(new RedisRecentMarks(redis, `${config.busPrefix}:th`)) : undefined;
  return new AutomatedHits(marks ?? new MemoryRecentMarks(), config.trackingDetectAutomated);
}
