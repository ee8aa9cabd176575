import { WAITING_IN_ORDER } from '../deliveries.js'
import type { Async } from '../contract.js'
import { addBuckets, emptyBuckets, type BucketRow, type EndpointHealthRow, type EndpointState, type StatsStore } from '../stats.js'
import { pgSchemaDdl } from './migrations.js'
import type { PgQueryable } from './queryable.js'

const HEALTH = `e.id, e.app_id AS "appId", e.url, e.disabled, e.disabled_reason AS "disabledReason", e.paused_until AS "pausedUntil",
      e.pause_count AS "pauseCount", e.failures_since_success AS "consecutiveFailures", e.last_success_at AS "lastSuccessAt",
      (SELECT count(*) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending`
// started_at >= since, so the division is never negative and floor is SQLite's CAST … AS INTEGER.
const BUCKET = `floor((a.started_at - $1)::float8 / $3::float8)::bigint AS b, a.outcome, count(*) AS n, sum(a.duration_ms) AS ms`
// Successes whose attempt is kept in the delivery row (schema v12), by deliveries_finished: an
// attempt starts before its row is settled, so the row's completed_at is at least since.
const ROW_BUCKET = `floor((d.success_started_at - $1)::float8 / $3::float8)::bigint AS b, 'success' AS outcome, count(*) AS n,
      sum(d.success_duration_ms) AS ms`
const IN_ROWS = `FROM deliveries d WHERE d.completed_at >= $1 AND d.success_started_at >= $1 AND d.success_started_at < $2`

const SQL = {
  endpointHealth: `SELECT ${HEALTH} FROM endpoints e WHERE e.deleted_at IS NULL ORDER BY e.id LIMIT $1`,
  endpointStates: `SELECT id, disabled, disabled_reason AS "disabledReason", paused_until AS "pausedUntil",
      pause_count AS "pauseCount" FROM endpoints WHERE deleted_at IS NULL ORDER BY id LIMIT $1`,
  oldestPendingCreated: `SELECT min(created_at) AS v FROM deliveries WHERE status = 'pending'`,
  attemptBuckets: `SELECT ${BUCKET} FROM attempts a WHERE a.started_at >= $1 AND a.started_at < $2 GROUP BY b, a.outcome
    UNION ALL SELECT ${ROW_BUCKET} ${IN_ROWS} GROUP BY b`,
  appAttemptBuckets: `SELECT ${BUCKET} FROM attempts a JOIN deliveries d ON d.id = a.delivery_id
    WHERE a.started_at >= $1 AND a.started_at < $2 AND d.app_id = $4 GROUP BY b, a.outcome
    UNION ALL SELECT ${ROW_BUCKET} ${IN_ROWS} AND d.app_id = $4 GROUP BY b`,
  endpointAttemptBuckets: `SELECT ${BUCKET} FROM attempts a JOIN deliveries d ON d.id = a.delivery_id
    WHERE a.started_at >= $1 AND a.started_at < $2 AND d.endpoint_id = $4 GROUP BY b, a.outcome
    UNION ALL SELECT ${ROW_BUCKET} ${IN_ROWS} AND d.endpoint_id = $4 GROUP BY b`,
  countByAppAndStatus: `SELECT app_id AS "appId", status, count(*) AS n FROM deliveries GROUP BY app_id, status ORDER BY app_id, status`,
  appEndpointHealth: `SELECT ${HEALTH} FROM endpoints e WHERE e.app_id = $1 AND e.deleted_at IS NULL ORDER BY e.id LIMIT $2`,
  appOldestPendingCreated: `SELECT min(created_at) AS v FROM deliveries WHERE status = 'pending' AND app_id = $1`,
  appNextDue: `SELECT min(next_attempt_at) AS v FROM deliveries WHERE status = 'pending' AND app_id = $1 AND next_attempt_at < ${WAITING_IN_ORDER}`,
  // A standby, or a session or database set read-only, takes no writes.
  writable: `SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS "readOnly"`,
  tables: `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`,
} as const

type RawHealth = Omit<EndpointHealthRow, 'disabled'> & { disabled: number }

/**
 * The operations queries on PostgreSQL (StatsStore, src/store/stats.ts). `appId` is left out of
 * endpointHealth's rows for one application, as on SQLite.
 */
export function createPgStatsStore(q: PgQueryable): Async<StatsStore> {
  const rows = async <T>(sql: string, args: unknown[] = []): Promise<T[]> => (await q.query<T>(sql, args)).rows
  const value = async (sql: string, args: unknown[] = []): Promise<number | null> => (await rows<{ v: number | null }>(sql, args))[0]?.v ?? null
  const health = (rs: RawHealth[]): EndpointHealthRow[] => rs.map((r) => ({ ...r, disabled: r.disabled === 1 }))
  return {
    countByAppAndStatus: () => rows(SQL.countByAppAndStatus),
    appEndpointHealth: async (appId, limit = 10_000) =>
      health((await rows<RawHealth>(SQL.appEndpointHealth, [appId, limit])).map(({ appId: _a, ...r }) => r as RawHealth)),
    appOldestPendingCreatedAt: (appId) => value(SQL.appOldestPendingCreated, [appId]),
    appNextDueAt: (appId) => value(SQL.appNextDue, [appId]),
    async attemptTimeseries(since, until, bucketMs, filter = {}) {
      const params = [since, until, bucketMs]
      const found =
        filter.endpointId !== undefined
          ? await rows<BucketRow>(SQL.endpointAttemptBuckets, [...params, filter.endpointId])
          : filter.appId !== undefined
            ? await rows<BucketRow>(SQL.appAttemptBuckets, [...params, filter.appId])
            : await rows<BucketRow>(SQL.attemptBuckets, params)
      return addBuckets(emptyBuckets(since, until, bucketMs), found)
    },
    oldestPendingCreatedAt: () => value(SQL.oldestPendingCreated),
    // PostgreSQL checks its own pages; what can be wrong here is a schema missing tables (a
    // half-restored dump, the wrong search_path): each missing table is one problem.
    async integrityCheck() {
      const have = new Set((await rows<{ name: string }>(SQL.tables)).map((r) => r.name))
      const want = [...pgSchemaDdl().matchAll(/CREATE TABLE (\w+)/g)].map((m) => m[1]!)
      return want.filter((t) => !have.has(t)).map((t) => `missing table ${t}`)
    },
    endpointHealth: async (limit = 10_000) => health(await rows<RawHealth>(SQL.endpointHealth, [limit])),
    endpointStates: async (limit = 10_000) =>
      (await rows<Omit<EndpointState, 'disabled'> & { disabled: number }>(SQL.endpointStates, [limit])).map((r) => ({ ...r, disabled: r.disabled === 1 })),
    async probeWritable() {
      const r = (await rows<{ standby: boolean; readOnly: string }>(SQL.writable))[0]!
      if (r.standby || r.readOnly === 'on') throw Object.assign(new Error('database is read-only'), { code: 'PG_READONLY' })
    },
  }
}
