/** One endpoint's health, for `postbox stats` and the circuit-state metric. */
export interface EndpointHealthRow {
  id: string
  appId: string
  url: string
  disabled: boolean
  disabledReason: string | null
  pausedUntil: number | null
  pauseCount: number
  /** Failed attempts since the last success (the API's consecutive_failures). */
  consecutiveFailures: number
  lastSuccessAt: number | null
  pending: number
}

/** An endpoint's breaker and disabled state, for the metrics. */
export type EndpointState = Pick<EndpointHealthRow, 'id' | 'disabled' | 'disabledReason' | 'pausedUntil' | 'pauseCount'>

/**
 * Below this much free space on the database's file system the store reports itself not ready:
 * a write lock is still granted on a full disk, so readiness must look at the space as well.
 */
export const MIN_FREE_BYTES = 1024 * 1024

/** Attempts in one time bucket, by outcome (success, retry, dead, snooze). */
export interface AttemptBucket {
  /** The bucket's start, epoch ms. */
  start: number
  counts: Record<string, number>
  /** The summed duration of those attempts, in ms. */
  durationMs: number
}

/** Read-only aggregate queries for operations (stats, metrics, readiness). */
export interface StatsStore {
  /** Health of up to `limit` live endpoints. */
  endpointHealth(limit?: number): EndpointHealthRow[]
  /** Breaker and disabled state of up to `limit` live endpoints (endpointHealth without url, last success or pending count). */
  endpointStates(limit?: number): EndpointState[]
  /**
   * Attempts started in `[since, until)` (of one endpoint's deliveries, when given) counted per
   * `bucketMs` by outcome; every bucket is listed, empty ones too.
   */
  attemptTimeseries(since: number, until: number, bucketMs: number, filter?: { endpointId?: string; appId?: string }): AttemptBucket[]
  /** Deliveries by application and status (one scan of the table). */
  countByAppAndStatus(): { appId: string; status: string; n: number }[]
  /** endpointHealth of one application's endpoints. */
  appEndpointHealth(appId: string, limit?: number): EndpointHealthRow[]
  /** oldestPendingCreatedAt of one application's deliveries. */
  appOldestPendingCreatedAt(appId: string): number | null
  /** When the earliest pending delivery of `appId` is due (rows waiting in order left out); null when none. */
  appNextDueAt(appId: string): number | null
  /** Throws when the database cannot take a write lock (read-only file, locked, closed) or its disk is full. */
  probeWritable(): void
  /** SQLite's quick_check; an empty list means the file is sound. */
  integrityCheck(): string[]
  /** When the oldest pending delivery was created (retries and held rows included); null when none. Reads every pending row. */
  oldestPendingCreatedAt(): number | null
}

/** One (bucket, outcome) count of the timeseries queries (SQLite's and PostgreSQL's). */
export interface BucketRow {
  b: number
  outcome: string
  n: number
  ms: number
}

/** Every bucket of [since, until), empty. */
export function emptyBuckets(since: number, until: number, bucketMs: number): AttemptBucket[] {
  const n = Math.max(0, Math.ceil((until - since) / bucketMs))
  return Array.from({ length: n }, (_, i) => ({ start: since + i * bucketMs, counts: {}, durationMs: 0 }))
}

/** Adds counted rows to their buckets (attempts rows and row-kept successes both count `success`); returns `out`. */
export function addBuckets(out: AttemptBucket[], rows: readonly BucketRow[]): AttemptBucket[] {
  for (const r of rows) {
    const bucket = out[r.b]
    if (!bucket) continue
    bucket.counts[r.outcome] = (bucket.counts[r.outcome] ?? 0) + Number(r.n)
    bucket.durationMs += Number(r.ms)
  }
  return out
}
