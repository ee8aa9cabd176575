/**
 * The endpoints table on PostgreSQL: the `Async<EndpointsStore>` of src/store/endpoints.ts.
 *
 * `version()` and `settingsVersion()` read the one row of `endpoint_versions`, which every write
 * of this family that SQLite counts bumps in the same statement (a CTE), so a cache on any node
 * sees a change made on another by its next read of that row: one indexed single-row read, with
 * no LISTEN/NOTIFY needed for correctness (pg-base may put a notified cache in front of it).
 */
import type { Async } from '../contract.js'
import { mapEndpointRow, type EndpointRow, type EndpointSettings, type EndpointsStore, type RawEndpointRow } from '../endpoints.js'
import { decodeIdCursor, pageById } from '../../lib/cursor.js'
import { quoteAliases } from './atomic.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = quoteAliases(`id, app_id AS appId, url, description, event_types AS eventTypes, headers, method, timeout_ms AS timeoutMs,
  max_concurrency AS maxConcurrency, rate_limit AS rateLimit, ordered, retry_schedule AS retrySchedule, signature,
  secret, previous_secrets AS previousSecrets, metadata, disabled, disabled_reason AS disabledReason,
  deleted_at AS deletedAt, last_success_at AS lastSuccessAt, last_failure_at AS lastFailureAt,
  failing_since AS failingSince, consecutive_failures AS consecutiveFailures,
  failures_since_success AS failuresSinceSuccess, paused_until AS pausedUntil, pause_count AS pauseCount,
  recent_failures AS recentFailures, recent_attempts AS recentAttempts, breaker_threshold AS breakerThreshold,
  breaker_pause_ms AS breakerPauseMs, breaker_max_pause_ms AS breakerMaxPauseMs, created_at AS createdAt, updated_at AS updatedAt, mode`)

/** The breaker's window (delivery/breaker.ts BREAKER_WINDOW, repeated: store sits below delivery). */
const WINDOW = 20
const WINDOW_MASK = (1 << WINDOW) - 1

/** Wraps a write so the same statement bumps the versions when it changed a row (`settings`: both). */
const bumping = (write: string, settings: boolean): string => `WITH w AS (${write} RETURNING id),
  b AS (UPDATE endpoint_versions SET version = version + 1${settings ? ', settings_version = settings_version + 1' : ''}
        WHERE id = 1 AND EXISTS (SELECT 1 FROM w))
  SELECT id FROM w`

// Parameters of the settings: $2 … $16, in this order (settingsParams).
const SETTINGS = `url = $2, description = $3, event_types = $4, headers = $5, method = $6, timeout_ms = $7,
      max_concurrency = $8, rate_limit = $9, ordered = $10, retry_schedule = $11, signature = $12, metadata = $13,
      breaker_threshold = $14, breaker_pause_ms = $15, breaker_max_pause_ms = $16`

const SQL = {
  insert: bumping(
    `INSERT INTO endpoints (id, url, description, event_types, headers, method, timeout_ms, max_concurrency, rate_limit,
      ordered, retry_schedule, signature, metadata, breaker_threshold, breaker_pause_ms, breaker_max_pause_ms,
      app_id, secret, disabled, disabled_reason, created_at, updated_at, mode)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $21, $22)`,
    true,
  ),
  get: `SELECT ${COLUMNS} FROM endpoints WHERE id = $1 AND deleted_at IS NULL`,
  getAny: `SELECT ${COLUMNS} FROM endpoints WHERE id = $1`,
  active: `SELECT ${COLUMNS} FROM endpoints WHERE disabled = 0 AND deleted_at IS NULL ORDER BY id`,
  activeForApp: `SELECT ${COLUMNS} FROM endpoints WHERE app_id = $1 AND deleted_at IS NULL AND disabled = 0 ORDER BY id`,
  removeForApp: bumping(`UPDATE endpoints SET deleted_at = $2, updated_at = $2 WHERE app_id = $1 AND deleted_at IS NULL`, true),
  update: bumping(`UPDATE endpoints SET ${SETTINGS}, updated_at = $17 WHERE id = $1 AND deleted_at IS NULL`, true),
  softDelete: bumping(`UPDATE endpoints SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL`, true),
  setSecret: bumping(`UPDATE endpoints SET secret = $2, previous_secrets = $3, updated_at = $4 WHERE id = $1 AND deleted_at IS NULL`, true),
  successQuick: `UPDATE endpoints SET last_success_at = $2
    WHERE id = $1 AND consecutive_failures = 0 AND pause_count = 0 AND failing_since IS NULL AND paused_until IS NULL
      AND recent_failures = 0 AND recent_attempts >= ${WINDOW}`,
  // The pause it ends is read from the row as it was (the FROM's snapshot), in the same statement.
  success: `WITH old AS (SELECT id, paused_until FROM endpoints WHERE id = $1 FOR UPDATE),
    w AS (UPDATE endpoints e SET last_success_at = $2, consecutive_failures = 0, failures_since_success = 0,
        failing_since = NULL, paused_until = NULL, pause_count = 0,
        recent_failures = (recent_failures << 1) & ${WINDOW_MASK}, recent_attempts = least(recent_attempts + 1, ${WINDOW})
      FROM old WHERE e.id = old.id
      RETURNING old.paused_until AS "pausedUntil", (e.recent_failures = 0 AND e.recent_attempts >= ${WINDOW}) AS steady),
    b AS (UPDATE endpoint_versions SET version = version + 1 WHERE id = 1)
    SELECT "pausedUntil", steady FROM w`,
  failure: `UPDATE endpoints SET last_failure_at = $2, failing_since = COALESCE(failing_since, $2),
      failures_since_success = failures_since_success + 1,
      consecutive_failures = consecutive_failures + $3,
      recent_failures = CASE $3::integer WHEN 1 THEN ((recent_failures << 1) | 1) & ${WINDOW_MASK} ELSE recent_failures END,
      recent_attempts = CASE $3::integer WHEN 1 THEN least(recent_attempts + 1, ${WINDOW}) ELSE recent_attempts END
    WHERE id = $1
    RETURNING ${COLUMNS}`,
  pause: bumping(`UPDATE endpoints SET paused_until = $2, pause_count = pause_count + 1 WHERE id = $1`, false),
  disable: bumping(`UPDATE endpoints SET disabled = 1, disabled_reason = $2, updated_at = $3 WHERE id = $1 AND disabled = 0 AND deleted_at IS NULL`, true),
  enable: bumping(
    `UPDATE endpoints SET disabled = 0, disabled_reason = NULL, consecutive_failures = 0,
      failures_since_success = 0, failing_since = NULL, paused_until = NULL, pause_count = 0, updated_at = $2
    WHERE id = $1 AND deleted_at IS NULL`,
    true,
  ),
  versions: `SELECT version, settings_version AS "settingsVersion" FROM endpoint_versions WHERE id = 1`,
  invalidate: `UPDATE endpoint_versions SET version = version + 1, settings_version = settings_version + 1 WHERE id = 1`,
} as const

/** The settings as parameters $2 … $16 of SETTINGS (the caller puts the id first). */
function settingsParams(s: EndpointSettings): unknown[] {
  return [
    s.url,
    s.description,
    s.eventTypes === null ? null : JSON.stringify(s.eventTypes),
    JSON.stringify(s.headers),
    s.method,
    s.timeoutMs,
    s.maxConcurrency,
    s.rateLimit,
    s.ordered ? 1 : 0,
    s.retrySchedule === null ? null : JSON.stringify(s.retrySchedule),
    s.signature,
    JSON.stringify(s.metadata),
    s.breakerThreshold ?? null,
    s.breakerPauseMs ?? null,
    s.breakerMaxPauseMs ?? null,
  ]
}

/** Creates the endpoints family over `q` (the pool, or a transaction's client). */
export function createPgEndpointsStore(q: PgQueryable): Async<EndpointsStore> {
  const rows = async (sql: string, params: unknown[] = []): Promise<EndpointRow[]> =>
    (await q.query<RawEndpointRow>(sql, params)).rows.map((r) => mapEndpointRow(r)!)
  const changed = async (sql: string, params: unknown[]): Promise<boolean> => ((await q.query(sql, params)).rowCount ?? 0) > 0
  const versions = async (): Promise<{ version: number; settingsVersion: number }> =>
    (await q.query<{ version: number; settingsVersion: number }>(SQL.versions)).rows[0]!
  return {
    async insert(row, now) {
      await q.query(SQL.insert, [row.id, ...settingsParams(row), row.appId ?? 'default', row.secret, row.disabled ? 1 : 0, row.disabledReason, now, row.mode ?? 'push'])
    },
    get: async (id) => mapEndpointRow((await q.query<RawEndpointRow>(SQL.get, [id])).rows[0]),
    getAny: async (id) => mapEndpointRow((await q.query<RawEndpointRow>(SQL.getAny, [id])).rows[0]),
    active: () => rows(SQL.active),
    activeForApp: (appId) => rows(SQL.activeForApp, [appId]),
    removeForApp: async (appId, now) => (await q.query<{ id: string }>(SQL.removeForApp, [appId, now])).rows.map((r) => r.id).sort(),
    async list({ limit, cursor, appId }) {
      const after = decodeIdCursor(cursor)
      const params: unknown[] = []
      const app = appId !== undefined ? `AND app_id = $${params.push(appId)}` : ''
      const before = after ? `AND id < $${params.push(after)}` : ''
      const sql = `SELECT ${COLUMNS} FROM endpoints WHERE deleted_at IS NULL ${app} ${before} ORDER BY id DESC LIMIT $${params.push(limit + 1)}`
      return pageById(await rows(sql, params), limit)
    },
    update: (id, settings, now) => changed(SQL.update, [id, ...settingsParams(settings), now]),
    softDelete: (id, now) => changed(SQL.softDelete, [id, now]),
    setSecret: (id, secret, previous, now) => changed(SQL.setSecret, [id, secret, JSON.stringify(previous), now]),
    async recordSuccess(id, now) {
      // The common case (already healthy) touches one column and leaves caches valid.
      if (((await q.query(SQL.successQuick, [id, now])).rowCount ?? 0) > 0) return { pausedUntil: null, steady: true }
      const r = (await q.query<{ pausedUntil: number | null; steady: boolean }>(SQL.success, [id, now])).rows[0]
      return { pausedUntil: r?.pausedUntil ?? null, steady: r?.steady === true }
    },
    recordFailure: async (id, breakerFailure, now) => mapEndpointRow((await q.query<RawEndpointRow>(SQL.failure, [id, now, breakerFailure ? 1 : 0])).rows[0]),
    async pause(id, until) {
      await q.query(SQL.pause, [id, until])
    },
    disable: (id, reason, now) => changed(SQL.disable, [id, reason, now]),
    enable: (id, now) => changed(SQL.enable, [id, now]),
    version: async () => (await versions()).version,
    settingsVersion: async () => (await versions()).settingsVersion,
    async invalidate() {
      await q.query(SQL.invalidate)
    },
  }
}
