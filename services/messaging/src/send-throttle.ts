import type { RedisLink } from '@svc/lib/redis';
import { RedisTokenBuckets } from '@svc/lib/token-bucket';
import type { MessagingConfig as Config } from './config.js';
import { ProjectThrottle, SharedProjectThrottle, type SendThrottle } from './domain/throttle.js';

/**
 * The delivery throttle: shared by every messaging replica through Redis when REDIS_URL is
 * set (keys `<BUS_PREFIX>:send:<project>`), else in-process.
 */
export function sendThrottle(config: Config, redis: RedisLink | undefined): SendThrottle {
  if (!redis) return new ProjectThrottle(config.sendRatePerSecond);
  return new SharedProjectThrottle(new RedisTokenBuckets(redis, `${config.busPrefix}:send`), config.sendRatePerSecond);
}
