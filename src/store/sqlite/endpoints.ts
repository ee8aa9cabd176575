import { prepareAll, statementCache, type Db } from './db.js'
import { decodeIdCursor, pageById } from '../../lib/cursor.js'
import { FOREIGN_CHANGE_CHECK_MS, mapEndpointRow, type EndpointSettings, type EndpointsStore, type RawEndpointRow } from '../endpoints.js'

const COLUMNS = `id, app_id AS appId, url, description, event_types AS eventTypes, headers, method, timeout_ms AS timeoutMs,
  max_concurrency AS maxConcurrency, rate_limit AS rateLimit, ordered, retry_schedule AS retrySchedule, signature,
  secret, previous_secrets AS previousSecrets, metadata, disabled, disabled_reason AS disabledReason,
  deleted_at AS deletedAt, last_success_at AS lastSuccessAt, last_failure_at AS lastFailureAt,
  failing_since AS failingSince, consecutive_failures AS consecutiveFailures,
  failures_since_success AS failuresSinceSuccess, paused_until AS pausedUntil, pause_count AS pauseCount,
  recent_failures AS recentFailures, recent_attempts AS recentAttempts, breaker_threshold AS breakerThreshold,
  breaker_pause_ms AS breakerPauseMs, breaker_max_pause_ms AS breakerMaxPauseMs, created_at AS createdAt, updated_at AS updatedAt, mode`

/** The breaker's window (delivery/breaker.ts BREAKER_WINDOW, repeated: store sits below delivery). */
const WINDOW = 20
const WINDOW_MASK = (1 << WINDOW) - 1

const SQL = {
  insert: `INSERT INTO endpoints (id, app_id, url, description, event_types, headers, method, timeout_ms, max_concurrency,
      rate_limit, ordered, retry_schedule, signature, secret, metadata, disabled, disabled_reason, breaker_threshold,
      breaker_pause_ms, breaker_max_pause_ms, created_at, updated_at, mode)
    VALUES (@id, @appId, @url, @description, @eventTypes, @headers, @method, @timeoutMs, @maxConcurrency, @rateLimit, @ordered,
      @retrySchedule, @signature, @secret, @metadata, @disabled, @disabledReason, @breakerThreshold, @breakerPauseMs,
      @breakerMaxPauseMs, @now, @now, @mode)`,
  get: `SELECT ${COLUMNS} FROM endpoints WHERE id = ? AND deleted_at IS NULL`,
  getAny: `SELECT ${COLUMNS} FROM endpoints WHERE id = ?`,
  active: `SELECT ${COLUMNS} FROM endpoints WHERE disabled = 0 AND deleted_at IS NULL ORDER BY id`,
  // endpoints_app: one application's endpoints, whatever the number of applications.
  activeForApp: `SELECT ${COLUMNS} FROM endpoints INDEXED BY endpoints_app WHERE app_id = ? AND deleted_at IS NULL AND disabled = 0 ORDER BY id`,
  removeForApp: `UPDATE endpoints SET deleted_at = @now, updated_at = @now WHERE app_id = @appId AND deleted_at IS NULL RETURNING id`,
  update: `UPDATE endpoints SET url = @url, description = @description, event_types = @eventTypes, headers = @headers,
      method = @method, timeout_ms = @timeoutMs, max_concurrency = @maxConcurrency, rate_limit = @rateLimit,
      ordered = @ordered, retry_schedule = @retrySchedule, signature = @signature, metadata = @metadata,
      breaker_threshold = @breakerThreshold, breaker_pause_ms = @breakerPauseMs, breaker_max_pause_ms = @breakerMaxPauseMs,
      updated_at = @now
    WHERE id = @id AND deleted_at IS NULL`,
  softDelete: `UPDATE endpoints SET deleted_at = @now, updated_at = @now WHERE id = @id AND deleted_at IS NULL`,
  setSecret: `UPDATE endpoints SET secret = @secret, previous_secrets = @previous, updated_at = @now
    WHERE id = @id AND deleted_at IS NULL`,
  // Healthy: a full window of successes, so one more changes nothing but the time.
  successQuick: `UPDATE endpoints SET last_success_at = @now
    WHERE id = @id AND consecutive_failures = 0 AND pause_count = 0 AND failing_since IS NULL AND paused_until IS NULL
      AND recent_failures = 0 AND recent_attempts >= ${WINDOW}`,
  pausedUntil: `SELECT paused_until FROM endpoints WHERE id = ?`,
  success: `UPDATE endpoints SET last_success_at = @now, consecutive_failures = 0, failures_since_success = 0,
      failing_since = NULL, paused_until = NULL, pause_count = 0,
      recent_failures = (recent_failures << 1) & ${WINDOW_MASK}, recent_attempts = min(recent_attempts + 1, ${WINDOW})
    WHERE id = @id
    RETURNING recent_failures = 0 AND recent_attempts >= ${WINDOW} AS steady`,
  // Only transport failures and 5xx (@breaker = 1) enter the breaker's window.
  failure: `UPDATE endpoints SET last_failure_at = @now, failing_since = COALESCE(failing_since, @now),
      failures_since_success = failures_since_success + 1,
      consecutive_failures = consecutive_failures + @breaker,
      recent_failures = CASE @breaker WHEN 1 THEN ((recent_failures << 1) | 1) & ${WINDOW_MASK} ELSE recent_failures END,
      recent_attempts = CASE @breaker WHEN 1 THEN min(recent_attempts + 1, ${WINDOW}) ELSE recent_attempts END
    WHERE id = @id
    RETURNING ${COLUMNS}`,
  pause: `UPDATE endpoints SET paused_until = @until, pause_count = pause_count + 1 WHERE id = @id`,
  disable: `UPDATE endpoints SET disabled = 1, disabled_reason = @reason, updated_at = @now
    WHERE id = @id AND disabled = 0 AND deleted_at IS NULL`,
  enable: `UPDATE endpoints SET disabled = 0, disabled_reason = NULL, consecutive_failures = 0,
      failures_since_success = 0, failing_since = NULL, paused_until = NULL, pause_count = 0, updated_at = @now
    WHERE id = @id AND deleted_at IS NULL`,
} as const

function settingsParams(s: EndpointSettings): Record<string, unknown> {
  return {
    url: s.url,
    description: s.description,
    eventTypes: s.eventTypes === null ? null : JSON.stringify(s.eventTypes),
    headers: JSON.stringify(s.headers),
    method: s.method,
    timeoutMs: s.timeoutMs,
    maxConcurrency: s.maxConcurrency,
    rateLimit: s.rateLimit,
    ordered: s.ordered ? 1 : 0,
    retrySchedule: s.retrySchedule === null ? null : JSON.stringify(s.retrySchedule),
    signature: s.signature,
    metadata: JSON.stringify(s.metadata),
    breakerThreshold: s.breakerThreshold ?? null,
    breakerPauseMs: s.breakerPauseMs ?? null,
    breakerMaxPauseMs: s.breakerMaxPauseMs ?? null,
  }
}

/** Creates the endpoints store over a connection. */
export function createEndpointsStore(db: Db, opts: { foreignCheckMs?: number } = {}): EndpointsStore {
  const s = prepareAll(db, SQL)
  const listStatement = statementCache(db)
  let version = 0
  let settingsVersion = 0
  // PRAGMA data_version moves when another connection commits. Checked at most once per
  // interval, so caches on the hot path stay free, and a change made elsewhere is seen within it.
  const foreignCheckMs = opts.foreignCheckMs ?? FOREIGN_CHANGE_CHECK_MS
  const dataVersion = db.prepare('PRAGMA data_version').pluck()
  let seenDataVersion = dataVersion.get()
  let checkedAt = performance.now()
  const bump = <T>(v: T): T => {
    version++
    return v
  }
  const bumpSettings = <T>(v: T): T => {
    settingsVersion++
    return bump(v)
  }
  const checkForeign = (): void => {
    const t = performance.now()
    if (t - checkedAt < foreignCheckMs) return
    checkedAt = t
    const dv = dataVersion.get()
    if (dv !== seenDataVersion) {
      seenDataVersion = dv
      version++
      settingsVersion++
    }
  }
  return {
    insert(row, now) {
      s.insert.run({ ...settingsParams(row), id: row.id, appId: row.appId ?? 'default', secret: row.secret, disabled: row.disabled ? 1 : 0, disabledReason: row.disabledReason, mode: row.mode ?? 'push', now })
      bumpSettings(0)
    },
    get: (id) => mapEndpointRow(s.get.get(id) as RawEndpointRow | undefined),
    getAny: (id) => mapEndpointRow(s.getAny.get(id) as RawEndpointRow | undefined),
    active: () => (s.active.all() as RawEndpointRow[]).map((r) => mapEndpointRow(r)!),
    activeForApp: (appId) => (s.activeForApp.all(appId) as RawEndpointRow[]).map((r) => mapEndpointRow(r)!),
    removeForApp: (appId, now) => bumpSettings((s.removeForApp.all({ appId, now }) as { id: string }[]).map((r) => r.id)),
    list({ limit, cursor, appId }) {
      const after = decodeIdCursor(cursor)
      const app = appId !== undefined ? 'AND app_id = ?' : ''
      const sql = `SELECT ${COLUMNS} FROM endpoints WHERE deleted_at IS NULL ${app} ${after ? 'AND id < ?' : ''} ORDER BY id DESC LIMIT ?`
      const params = [...(appId !== undefined ? [appId] : []), ...(after ? [after] : []), limit + 1]
      const page = pageById(listStatement(sql).all(...params) as RawEndpointRow[], limit)
      return { data: page.data.map((r) => mapEndpointRow(r)!), next_cursor: page.next_cursor }
    },
    update: (id, settings, now) => bumpSettings(s.update.run({ ...settingsParams(settings), id, now }).changes > 0),
    softDelete: (id, now) => bumpSettings(s.softDelete.run({ id, now }).changes > 0),
    setSecret: (id, secret, previous, now) =>
      bumpSettings(s.setSecret.run({ id, secret, previous: JSON.stringify(previous), now }).changes > 0),
    recordSuccess(id, now) {
      // The common case (already healthy) touches one column and leaves caches valid.
      if (s.successQuick.run({ id, now }).changes > 0) return { pausedUntil: null, steady: true }
      const pausedUntil = (s.pausedUntil.pluck().get(id) as number | null | undefined) ?? null
      const r = s.success.get({ id, now }) as { steady: number } | undefined
      bump(0)
      return { pausedUntil, steady: r?.steady === 1 }
    },
    recordFailure: (id, breakerFailure, now) =>
      mapEndpointRow(s.failure.get({ id, now, breaker: breakerFailure ? 1 : 0 }) as RawEndpointRow | undefined),
    pause: (id, until) => void bump(s.pause.run({ id, until })),
    disable: (id, reason, now) => bumpSettings(s.disable.run({ id, reason, now }).changes > 0),
    enable: (id, now) => bumpSettings(s.enable.run({ id, now }).changes > 0),
    version() {
      checkForeign()
      return version
    },
    settingsVersion() {
      checkForeign()
      return settingsVersion
    },
    invalidate: () => void bumpSettings(0),
  }
}
