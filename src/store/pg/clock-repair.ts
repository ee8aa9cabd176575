/**
 * Repair of times a clock that ran ahead left in the database, on PostgreSQL (ClockRepairStore,
 * src/store/clock-repair.ts, which explains the bounds and which rows move). Several nodes may run
 * it at once: each run takes a transaction-scoped advisory lock, so runs follow one another as
 * SQLite's IMMEDIATE transactions do, and the second finds nothing left to move.
 */
import { channelKey, WAITING_IN_ORDER } from '../deliveries.js'
import { PG_DUE_KEY as DUE_KEY } from './delivery-claim-sql.js'
import type { ClockRepairCounts, ClockRepairStore, FutureTimeLimits } from '../clock-repair.js'
import type { Async } from '../contract.js'
import type { PgQueryable } from './queryable.js'

/** The statements of the repair; as CLOCK_REPAIR_SQL, by the same partial indexes. */
export const PG_CLOCK_REPAIR_SQL = {
  lock: `SELECT pg_advisory_xact_lock(hashtextextended('postbox:clock-repair:' || current_schema(), 0))`,
  keyRows: `UPDATE deliveries SET next_attempt_at = $1, updated_at = $1
    WHERE status = 'pending' AND ${DUE_KEY()} = $2 AND next_attempt_at > $3 AND next_attempt_at < ${WAITING_IN_ORDER} AND updated_at > $1`,
  webhookRows: `UPDATE deliveries SET next_attempt_at = $1, updated_at = $1
    WHERE status = 'pending' AND next_attempt_at > $2 AND next_attempt_at < ${WAITING_IN_ORDER}
      AND endpoint_id IS NOT NULL AND endpoint_id <> ALL ($3::text[]) AND updated_at > $1`,
  farPauses: `SELECT id, paused_until AS until FROM endpoints WHERE paused_until > $1`,
  endPause: `UPDATE endpoints SET paused_until = $1 WHERE id = $2`,
  deferredRows: `UPDATE deliveries SET next_attempt_at = $1, updated_at = $1
    WHERE status = 'pending' AND ${DUE_KEY()} = $2 AND next_attempt_at = $3`,
  furthestRow: `SELECT next_attempt_at AS v FROM deliveries
    WHERE status = 'pending' AND next_attempt_at < ${WAITING_IN_ORDER} ORDER BY next_attempt_at DESC LIMIT 1`,
  furthestPause: `SELECT max(paused_until) AS v FROM endpoints`,
  customSchedules: `SELECT id, retry_schedule AS schedule FROM endpoints WHERE retry_schedule IS NOT NULL AND deleted_at IS NULL ORDER BY id`,
} as const

/** Runs a function in one transaction on one connection (the store's, or a pool's: pool.ts withPgTransaction). */
export type PgTransact = <T>(fn: (q: PgQueryable) => Promise<T>) => Promise<T>

/** The clock repair on PostgreSQL: `q` for reads, `transact` for the repair's one transaction. */
export function createPgClockRepairStore(q: PgQueryable, transact: PgTransact): Async<ClockRepairStore> {
  const s = PG_CLOCK_REPAIR_SQL
  const clamp = async (t: PgQueryable, l: FutureTimeLimits): Promise<ClockRepairCounts> => {
    await t.query(s.lock)
    const changed = async (sql: string, args: unknown[]): Promise<number> => (await t.query(sql, args)).rowCount ?? 0
    const rowMax = (await t.query<{ v: number }>(s.furthestRow)).rows[0]?.v ?? null
    const pauseMax = (await t.query<{ v: number | null }>(s.furthestPause)).rows[0]?.v ?? null
    const furthest = rowMax === null ? pauseMax : pauseMax === null ? rowMax : Math.max(rowMax, pauseMax)
    const tail = (key: string, limit: number): Promise<number> => changed(s.keyRows, [l.now, key, limit])
    const notificationRows = (await tail(channelKey('inbox'), l.inbox)) + (await tail(channelKey('email'), l.email)) + (await tail(channelKey('notify-webhook'), l.notifyWebhook))
    const custom = Object.keys(l.endpoints)
    let webhookRows = await changed(s.webhookRows, [l.now, l.webhook, custom])
    for (const id of custom) webhookRows += await tail(id, l.endpoints[id]!)
    const pauses = (await t.query<{ id: string; until: number }>(s.farPauses, [l.pause])).rows
    for (const p of pauses) {
      await t.query(s.endPause, [l.now, p.id])
      webhookRows += await changed(s.deferredRows, [l.now, p.id, p.until])
    }
    return { webhookRows, notificationRows, pausedEndpoints: pauses.length, furthest }
  }
  return {
    clampFutureTimes: (limits) => transact((t) => clamp(t, limits)),
    customRetrySchedules: async () =>
      (await q.query<{ id: string; schedule: string }>(s.customSchedules)).rows.map((r) => ({ id: r.id, schedule: JSON.parse(r.schedule) as number[] })),
  }
}
