import type { MessagingConfig as Config } from './config.js';
import type { Logger } from '@svc/lib/logger';
import { RedisLink } from '@svc/lib/redis';
import { RedisTokenBuckets } from '@svc/lib/token-bucket';
import { ProjectThrottle, SharedProjectThrottle, type SendThrottle } from './domain/throttle.js';

/**
 * The delivery throttle: shared by every messaging replica through Redis when REDIS_URL is
 * set (keys `<BUS_PREFIX>:send:<project>`), else in-process. `close` drops the Redis link.
 */
export function sendThrottle(config: Config, logger: Logger): { throttle: SendThrottle; close(): void } {
  if (!config.redisUrl) return { throttle: new ProjectThrottle(config.sendRatePerSecond), close: () => undefined };
  const redis = new RedisLink(config.redisUrl, {
    commandTimeoutMs: config.redisCommandTimeoutMs,
    logger,
    degradedTo: 'SEND_RATE_PER_SECOND counted per messaging replica until it is back',
  });
  const buckets = new RedisTokenBuckets(redis, `${config.busPrefix}:send`);
  return { throttle: new SharedProjectThrottle(buckets, config.sendRatePerSecond), close: () => redis.disconnect() };
}
