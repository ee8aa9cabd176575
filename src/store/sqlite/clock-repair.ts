/**
 * Repair of times a clock that ran ahead left in the file: pending deliveries and breaker pauses
 * scheduled further out than anything Postbox can legitimately schedule are made due now. The
 * bounds are policy (delivery/clock-repair.ts); this file only applies them.
 */
import { prepareAll, type Db } from './db.js'
import { DUE_KEY } from './delivery-claim-sql.js'
import { channelKey, WAITING_IN_ORDER } from '../deliveries.js'
import { type ClockRepairCounts, type ClockRepairStore, type FutureTimeLimits } from '../clock-repair.js'

// Each statement reads only the far tail of a partial index (status = 'pending'): rows due
// before their limit are never visited, so the hourly run costs index seeks plus the rows held
// legitimately far ahead (a weekly digest's emails). Rows waiting for their ordering key's turn
// (WAITING_IN_ORDER, the largest date) are not times. Only rows last written "after now" move:
// a row scheduled far out with a correct clock (a shortened schedule, a long hold) stays.
/** The statements of the repair (exported for the query-plan test). */
export const CLOCK_REPAIR_SQL = {
  // deliveries_endpoint_due, one key at a time: a channel's rows without an endpoint (`#inbox`,
  // `#email`, `#notify-webhook`), or an endpoint with its own retry schedule.
  keyRows: `UPDATE deliveries INDEXED BY deliveries_endpoint_due SET next_attempt_at = @now, updated_at = @now
    WHERE status = 'pending' AND ${DUE_KEY()} = @key AND next_attempt_at > @limit AND next_attempt_at < ${WAITING_IN_ORDER} AND updated_at > @now`,
  // deliveries_due, for the rows of endpoints on the global schedule (the NOT IN list, the
  // endpoints with their own, is built once per statement).
  webhookRows: `UPDATE deliveries INDEXED BY deliveries_due SET next_attempt_at = @now, updated_at = @now
    WHERE status = 'pending' AND next_attempt_at > @limit AND next_attempt_at < ${WAITING_IN_ORDER}
      AND endpoint_id IS NOT NULL AND endpoint_id NOT IN (SELECT value FROM json_each(@custom)) AND updated_at > @now`,
  // The endpoints table is small (one row per receiver) and has no index on the pause.
  farPauses: `SELECT id, paused_until AS until FROM endpoints WHERE paused_until > @limit`,
  endPause: `UPDATE endpoints SET paused_until = @now WHERE id = @id`,
  // The rows a pause deferred to its end (deliveries.deferPendingForEndpoint) wait for nothing
  // else once it is over, even when their time is within the webhook limit.
  deferredRows: `UPDATE deliveries INDEXED BY deliveries_endpoint_due SET next_attempt_at = @now, updated_at = @now
    WHERE status = 'pending' AND ${DUE_KEY()} = @key AND next_attempt_at = @until`,
  // One seek from the top of the index (max() over the range would walk the whole range).
  furthestRow: `SELECT next_attempt_at FROM deliveries INDEXED BY deliveries_due
    WHERE status = 'pending' AND next_attempt_at < ${WAITING_IN_ORDER} ORDER BY next_attempt_at DESC LIMIT 1`,
  furthestPause: `SELECT max(paused_until) FROM endpoints`,
  customSchedules: `SELECT id, retry_schedule AS schedule FROM endpoints WHERE retry_schedule IS NOT NULL AND deleted_at IS NULL`,
} as const

/** Creates the clock repair store over a connection. */
export function createClockRepairStore(db: Db): ClockRepairStore {
  const s = prepareAll(db, CLOCK_REPAIR_SQL)
  const furthestRow = s.furthestRow.pluck()
  const furthestPause = s.furthestPause.pluck()

  const clampTx = db.transaction((l: FutureTimeLimits): ClockRepairCounts => {
    const rowMax = (furthestRow.get() as number | undefined) ?? null
    const pauseMax = furthestPause.get() as number | null
    const furthest = rowMax === null ? pauseMax : pauseMax === null ? rowMax : Math.max(rowMax, pauseMax)
    const tail = (key: string, limit: number): number => s.keyRows.run({ now: l.now, key, limit }).changes
    const notificationRows = tail(channelKey('inbox'), l.inbox) + tail(channelKey('email'), l.email) + tail(channelKey('notify-webhook'), l.notifyWebhook)
    const custom = Object.keys(l.endpoints)
    let webhookRows = s.webhookRows.run({ now: l.now, limit: l.webhook, custom: JSON.stringify(custom) }).changes
    for (const id of custom) webhookRows += tail(id, l.endpoints[id]!)
    const pauses = s.farPauses.all({ limit: l.pause }) as { id: string; until: number }[]
    for (const p of pauses) {
      s.endPause.run({ now: l.now, id: p.id })
      webhookRows += s.deferredRows.run({ now: l.now, key: p.id, until: p.until }).changes
    }
    const pausedEndpoints = pauses.length
    return { webhookRows, notificationRows, pausedEndpoints, furthest }
  })

  return {
    clampFutureTimes: (limits) => clampTx.immediate(limits),
    customRetrySchedules: () =>
      (s.customSchedules.all() as { id: string; schedule: string }[]).map((r) => ({ id: r.id, schedule: JSON.parse(r.schedule) as number[] })),
  }
}
