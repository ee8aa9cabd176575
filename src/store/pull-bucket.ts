/**
 * The rate bucket of a pull endpoint's claims (docs/pull-endpoints.md), shared by both backends'
 * claimPull: SQLite keeps buckets in memory, PostgreSQL in endpoint_tokens.
 */

/** A pull endpoint's token bucket: `rate_limit` claims per second, a burst of one second's worth (at least 1), as delivery/rate-limit.ts. */
export interface PullBucket {
  tokens: number
  at: number
}

/** How many claims `bucket` allows at `now` under `rate` per second (null: any number), and the bucket after `taken` of them. */
export function bucketRoom(rate: number | null, bucket: PullBucket | undefined, now: number): { room: number; take(taken: number): PullBucket } {
  if (rate === null || rate <= 0) return { room: Infinity, take: () => ({ tokens: 0, at: now }) }
  const burst = Math.max(1, rate)
  const tokens = bucket === undefined ? burst : Math.min(burst, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * rate)
  return { room: Math.floor(tokens), take: (taken) => ({ tokens: tokens - taken, at: Math.max(now, bucket?.at ?? now) }) }
}

