import type { Pool } from '@svc/lib/db';

export interface TimeseriesBucketRow {
  bucket: Date;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
}

/** The lifecycle steps counted, each by the emails column holding when it happened (migration 006 indexes each). */
const STEPS = [
  ['sent', 'sent_at'],
  ['delivered', 'delivered_at'],
  ['opened', 'first_opened_at'],
  ['clicked', 'first_clicked_at'],
  ['bounced', 'bounced_at'],
] as const;

export class TimeseriesStore {
  constructor(readonly pool: Pool) {}

  /**
   * One statement: per step, an index range scan of (project_id, <step>_at) over [from, to) grouped by UTC bucket,
   * joined to every bucket of the range (generate_series) so empty buckets answer zeros. Test emails are left out.
   */
  async buckets(
    projectId: string,
    range: { interval: 'day' | 'hour'; from: Date; to: Date; campaignId?: string },
  ): Promise<TimeseriesBucketRow[]> {
    const counts = STEPS.map(
      ([step, column]) =>
        `SELECT '${step}' AS step, date_trunc($4, ${column}, 'UTC') AS bucket, count(*) AS n FROM emails
         WHERE project_id = $1 AND ${column} >= $2 AND ${column} < $3 AND NOT test
           AND ($6::uuid IS NULL OR campaign_id = $6) GROUP BY 2`,
    ).join(' UNION ALL ');
    const sums = STEPS.map(([step]) => `coalesce(sum(c.n) FILTER (WHERE c.step = '${step}'), 0) AS ${step}`).join(', ');
    const { rows } = await this.pool.query<TimeseriesBucketRow>(
      `WITH counts AS (${counts})
       SELECT s.bucket, ${sums}
       FROM generate_series($2::timestamptz, $3::timestamptz - $5::interval, $5::interval) AS s(bucket)
       LEFT JOIN counts c ON c.bucket = s.bucket
       GROUP BY s.bucket ORDER BY s.bucket`,
      [
        projectId,
        range.from,
        range.to,
        range.interval,
        range.interval === 'day' ? '24 hours' : '1 hour',
        range.campaignId ?? null,
      ],
    );
    return rows;
  }
}
