import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Db } from './db.js'
import { WAITING_IN_ORDER } from '../deliveries.js'
import { MIN_FREE_BYTES, addBuckets, emptyBuckets, type BucketRow, type EndpointHealthRow, type EndpointState, type StatsStore } from '../stats.js'

/**
 * Successes whose attempt is kept in the delivery row (schema.sql, v12), one row per bucket, by
 * deliveries_finished: an attempt starts before its row is settled, so completed_at >= since.
 */
const ROW_BUCKETS = (filter: string): string => `SELECT CAST((success_started_at - :since) / :bucket AS INTEGER) AS b,
      'success' AS outcome, count(*) AS n, sum(success_duration_ms) AS ms FROM deliveries INDEXED BY deliveries_finished
    WHERE completed_at >= :since AND success_started_at >= :since AND success_started_at < :until ${filter} GROUP BY b`

const SQL = {
  endpointHealth: `SELECT e.id, e.app_id AS appId, e.url, e.disabled, e.disabled_reason AS disabledReason, e.paused_until AS pausedUntil,
      e.pause_count AS pauseCount, e.failures_since_success AS consecutiveFailures, e.last_success_at AS lastSuccessAt,
      (SELECT count(*) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending
    FROM endpoints e WHERE e.deleted_at IS NULL ORDER BY e.id LIMIT ?`,
  // The metrics' view: no pending count per endpoint (one more index walk each).
  endpointStates: `SELECT id, disabled, disabled_reason AS disabledReason, paused_until AS pausedUntil,
      pause_count AS pauseCount FROM endpoints WHERE deleted_at IS NULL ORDER BY id LIMIT ?`,
  // Every pending row's creation time: fine for `postbox stats`, too slow for every metrics scrape.
  oldestPendingCreated: `SELECT min(created_at) FROM deliveries INDEXED BY deliveries_due WHERE status = 'pending'`,
  // By the attempts_started index; one row per (bucket, outcome) that has attempts.
  attemptBuckets: `SELECT CAST((started_at - :since) / :bucket AS INTEGER) AS b, outcome, count(*) AS n, sum(duration_ms) AS ms
    FROM attempts INDEXED BY attempts_started WHERE started_at >= :since AND started_at < :until GROUP BY b, outcome`,
  // One application's: the same, with each attempt's delivery read by primary key.
  appAttemptBuckets: `SELECT CAST((a.started_at - :since) / :bucket AS INTEGER) AS b, a.outcome, count(*) AS n, sum(a.duration_ms) AS ms
    FROM attempts a INDEXED BY attempts_started CROSS JOIN deliveries d ON d.id = a.delivery_id
    WHERE a.started_at >= :since AND a.started_at < :until AND d.app_id = :app GROUP BY b, a.outcome`,
  // One endpoint's: the attempts of the range, each joined to its delivery by primary key.
  endpointAttemptBuckets: `SELECT CAST((a.started_at - :since) / :bucket AS INTEGER) AS b, a.outcome, count(*) AS n, sum(a.duration_ms) AS ms
    FROM attempts a INDEXED BY attempts_started CROSS JOIN deliveries d ON d.id = a.delivery_id
    WHERE a.started_at >= :since AND a.started_at < :until AND d.endpoint_id = :endpoint GROUP BY b, a.outcome`,
  rowAttemptBuckets: ROW_BUCKETS(''),
  appRowAttemptBuckets: ROW_BUCKETS('AND app_id = :app'),
  endpointRowAttemptBuckets: ROW_BUCKETS('AND endpoint_id = :endpoint'),
  // Like `postbox stats`, one scan of the table: the counts of every application at once.
  countByAppAndStatus: `SELECT app_id AS appId, status, count(*) AS n FROM deliveries GROUP BY app_id, status`,
  appEndpointHealth: `SELECT e.id, e.url, e.disabled, e.disabled_reason AS disabledReason, e.paused_until AS pausedUntil,
      e.pause_count AS pauseCount, e.failures_since_success AS consecutiveFailures, e.last_success_at AS lastSuccessAt,
      (SELECT count(*) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending
    FROM endpoints e WHERE e.app_id = ? AND e.deleted_at IS NULL ORDER BY e.id LIMIT ?`,
  appOldestPendingCreated: `SELECT min(created_at) FROM deliveries INDEXED BY deliveries_due WHERE status = 'pending' AND app_id = ?`,
  // As deliveries' oldestPending (rows waiting their turn in order are not due), for one application.
  appNextDue: `SELECT min(next_attempt_at) FROM deliveries INDEXED BY deliveries_due
    WHERE status = 'pending' AND app_id = ? AND next_attempt_at < ${WAITING_IN_ORDER}`,
  quickCheck: `PRAGMA quick_check`,
  begin: `BEGIN IMMEDIATE`,
  rollback: `ROLLBACK`,
} as const

/** Creates the stats store over a connection. */
export function createStatsStore(db: Db): StatsStore {
  // Every statement is prepared on first use: `postbox check` builds this store over files of
  // older schema versions too (for integrityCheck), which lack app_id columns and the
  // attempts_started index the other statements name (docs/operations.md, upgrades).
  const lazy = (sql: string, pluck = false) => {
    let st: ReturnType<Db['prepare']> | null = null
    return () => (st ??= pluck ? db.prepare(sql).pluck() : db.prepare(sql))
  }
  const health = lazy(SQL.endpointHealth)
  const states = lazy(SQL.endpointStates)
  const begin = lazy(SQL.begin)
  const rollback = lazy(SQL.rollback)
  const quickCheck = lazy(SQL.quickCheck, true)
  const oldestPendingCreated = lazy(SQL.oldestPendingCreated, true)
  const attemptBuckets = lazy(SQL.attemptBuckets)
  const endpointAttemptBuckets = lazy(SQL.endpointAttemptBuckets)
  const appAttemptBuckets = lazy(SQL.appAttemptBuckets)
  const rowAttemptBuckets = lazy(SQL.rowAttemptBuckets)
  const endpointRowAttemptBuckets = lazy(SQL.endpointRowAttemptBuckets)
  const appRowAttemptBuckets = lazy(SQL.appRowAttemptBuckets)
  const byAppAndStatus = lazy(SQL.countByAppAndStatus)
  const appHealth = lazy(SQL.appEndpointHealth)
  const appOldest = lazy(SQL.appOldestPendingCreated, true)
  const appNextDue = lazy(SQL.appNextDue, true)
  const healthRows = (rows: unknown[]): EndpointHealthRow[] =>
    (rows as (Omit<EndpointHealthRow, 'disabled'> & { disabled: number })[]).map((r) => ({ ...r, disabled: r.disabled === 1 }))
  return {
    countByAppAndStatus: () => byAppAndStatus().all() as { appId: string; status: string; n: number }[],
    appEndpointHealth: (appId, limit = 10_000) => healthRows(appHealth().all(appId, limit)),
    appOldestPendingCreatedAt: (appId) => (appOldest().get(appId) as number | null) ?? null,
    appNextDueAt: (appId) => (appNextDue().get(appId) as number | null) ?? null,
    attemptTimeseries(since, until, bucketMs, filter = {}) {
      const out = emptyBuckets(since, until, bucketMs)
      const params = { since, until, bucket: bucketMs }
      const [logged, inRows, args] =
        filter.endpointId !== undefined
          ? [endpointAttemptBuckets(), endpointRowAttemptBuckets(), { ...params, endpoint: filter.endpointId }]
          : filter.appId !== undefined
            ? [appAttemptBuckets(), appRowAttemptBuckets(), { ...params, app: filter.appId }]
            : [attemptBuckets(), rowAttemptBuckets(), params]
      return addBuckets(out, [...(logged.all(args) as BucketRow[]), ...(inRows.all(args) as BucketRow[])])
    },
    oldestPendingCreatedAt: () => (oldestPendingCreated().get() as number | null) ?? null,
    integrityCheck() {
      const rows = quickCheck().all() as string[]
      return rows.length === 1 && rows[0] === 'ok' ? [] : rows
    },
    endpointHealth(limit = 10_000) {
      const rows = health().all(limit) as (Omit<EndpointHealthRow, 'disabled'> & { disabled: number })[]
      return rows.map((r) => ({ ...r, disabled: r.disabled === 1 }))
    },
    endpointStates(limit = 10_000) {
      const rows = states().all(limit) as (Omit<EndpointState, 'disabled'> & { disabled: number })[]
      return rows.map((r) => ({ ...r, disabled: r.disabled === 1 }))
    },
    probeWritable() {
      if (!db.open || db.readonly) throw Object.assign(new Error('database is read-only'), { code: 'SQLITE_READONLY' })
      if (db.inTransaction) return
      begin().run()
      rollback().run()
      if (db.memory) return
      const fs = statfsSync(dirname(db.name))
      // A file system that reports no blocks at all (some network or pseudo file systems) is not judged.
      if (fs.blocks > 0 && fs.bavail * fs.bsize < MIN_FREE_BYTES) throw Object.assign(new Error('disk full'), { code: 'SQLITE_FULL' })
    },
  }
}
