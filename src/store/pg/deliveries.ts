/**
 * The delivery queue on PostgreSQL: the `Async<DeliveriesStore>` of src/store/delivery-types.ts
 * (SQLite: src/store/deliveries.ts). The claim and its multi-node flow control are in
 * ./delivery-claim.ts; the list in ./delivery-list.ts.
 */
import type { Async } from '../contract.js'
import { truncateBody, WAITING_IN_ORDER, type Attempt, type DeliveriesStore, type Delivery, type DeliveryStatus, type NewDelivery } from '../deliveries.js'
import { newId } from '../../lib/ids.js'
import { byStatus, createPgClaimer, inPgTransaction, newPgClaimState, type PgClaimState } from './delivery-claim.js'
import { createPgDeliveryList } from './delivery-list.js'
import type { PgQueryable } from './queryable.js'
import { PG_DELIVERY_SQL as SQL } from './deliveries-sql.js'
import { settleAll } from './delivery-settle.js'
import { createPgPullClaimer } from './pull-claim.js'


/**
 * Creates the delivery family over `q` (the pool, or a transaction's client). `markDue` is called
 * whenever a write makes a row due now; the Store turns that into a wake after commit (and a
 * NOTIFY for the other nodes). `claims` is shared by every family of one store (its pool's and
 * its transactions'), so the claims' lease sweep is paced per node.
 */
export function createPgDeliveriesStore(q: PgQueryable, markDue: () => void = () => {}, claims: PgClaimState = newPgClaimState()): Async<DeliveriesStore> {
  const claimer = createPgClaimer(q, markDue, claims)
  const one = async <R>(sql: string, params: unknown[]): Promise<R | undefined> => (await q.query<R>(sql, params)).rows[0]
  const count = async (sql: string, params: unknown[]): Promise<number> => (await q.query(sql, params)).rowCount ?? 0


  /** Gives each row at `missed` (not inserted: it repeats a stored row) the stored row's id, in one statement. */
  const fillStoredIds = async (rows: readonly NewDelivery[], out: { id: string }[], missed: readonly number[]): Promise<void> => {
    if (missed.length === 0) return
    const m = missed.map((i) => rows[i]!)
    const { rows: found } = await q.query<{ byEvent: string | null; byNotification: string | null }>(SQL.existingIds, [
      m.map((r) => r.eventId ?? null),
      m.map((r) => r.endpointId ?? null),
      m.map((r) => r.notificationId ?? null),
      m.map((r) => r.recipient ?? null),
      m.map((r) => r.channel),
    ])
    missed.forEach((i, k) => (out[i]!.id = (found[k]!.byEvent ?? found[k]!.byNotification) as string))
  }

  /** insertDeliveredMany (delivery-types.ts): one statement, and one more when some row repeats. */
  const insertDeliveredMany = async (rows: readonly NewDelivery[], now: number): Promise<{ id: string; created: boolean }[]> => {
    if (rows.length === 0) return []
    const ids = rows.map((r) => r.id ?? newId('dlv', now))
    const { rows: inserted } = await q.query<{ id: string }>(SQL.insertDeliveredMany, [
      ids,
      rows.map((r) => r.channel),
      rows.map((r) => r.notificationId ?? null),
      rows.map((r) => r.recipient ?? null),
      rows.map((r) => r.eventType),
      rows.map((r) => r.payload ?? null),
      rows.map((r) => r.groupKey ?? null),
      rows.map((r) => r.maxAttempts),
      rows.map((r) => r.nextAttemptAt),
      now,
      rows.map((r) => r.appId ?? 'default'),
    ])
    const made = new Set(inserted.map((r) => r.id))
    const out = rows.map((_, i) => ({ id: ids[i]!, created: made.has(ids[i]!) }))
    await fillStoredIds(rows, out, rows.flatMap((_, i) => (out[i]!.created ? [] : [i])))
    return out
  }

  return {
    async enqueue(row, now) {
      const id = row.id ?? newId('dlv', now)
      const inserted = await one<{ nextAttemptAt: number }>(SQL.insert, [
        id,
        row.channel,
        row.eventId ?? null,
        row.endpointId ?? null,
        row.notificationId ?? null,
        row.recipient ?? null,
        row.eventType,
        row.orderingKey ?? null,
        row.payload ?? null,
        row.groupKey ?? null,
        row.maxAttempts,
        row.nextAttemptAt,
        now,
        row.appId ?? 'default',
        row.targetKey ?? null,
      ])
      if (inserted) {
        if (inserted.nextAttemptAt !== WAITING_IN_ORDER && row.nextAttemptAt <= now) markDue()
        return { id, created: true }
      }
      const existing =
        (row.eventId ? (await one<{ id: string }>(SQL.idByEvent, [row.eventId, row.endpointId ?? null]))?.id : undefined) ??
        (await one<{ id: string }>(SQL.idByNotification, [row.notificationId ?? null, row.recipient ?? null, row.channel]))?.id
      return { id: existing as string, created: false }
    },
    async enqueueMany(rows, now) {
      if (rows.length === 0) return []
      const ids = rows.map((r) => r.id ?? newId('dlv', now))
      const { rows: inserted } = await q.query<{ id: string; nextAttemptAt: number }>(SQL.enqueueMany, [
        ids,
        rows.map((r) => r.channel),
        rows.map((r) => r.eventId ?? null),
        rows.map((r) => r.endpointId ?? null),
        rows.map((r) => r.notificationId ?? null),
        rows.map((r) => r.recipient ?? null),
        rows.map((r) => r.eventType),
        rows.map((r) => r.orderingKey ?? null),
        rows.map((r) => r.payload ?? null),
        rows.map((r) => r.groupKey ?? null),
        rows.map((r) => r.maxAttempts),
        rows.map((r) => r.nextAttemptAt),
        rows.map((r) => r.appId ?? 'default'),
        rows.map((r) => r.targetKey ?? null),
        now,
      ])
      const at = new Map(inserted.map((r) => [r.id, r.nextAttemptAt]))
      let due = false
      const missed: number[] = []
      const out = rows.map((row, i) => {
        const next = at.get(ids[i]!)
        if (next === undefined) {
          missed.push(i)
          return { id: '', created: false }
        }
        if (next !== WAITING_IN_ORDER && row.nextAttemptAt <= now) due = true
        return { id: ids[i]!, created: true }
      })
      if (due) markDue()
      await fillStoredIds(rows, out, missed)
      return out
    },
    // One row through the batch statement: the same SQL, one statement (two on a repeat).
    insertDelivered: async (row, now) => (await insertDeliveredMany([row], now))[0]!,
    insertDeliveredMany,
    async logDelivered(ids, attempt) {
      if (ids.length > 0) await q.query(SQL.logDelivered, [attempt.startedAt, Math.max(0, Math.round(attempt.durationMs)), ids])
    },
    claimDue: claimer.claimDue,
    claimPull: createPgPullClaimer(q),
    releaseWaitingInOrder: claimer.releaseWaitingInOrder,
    settle: async (results, now) => (results.length === 0 ? [] : inPgTransaction(q, (c) => settleAll(c, results, now, markDue))),
    get: async (id) => (await one<Delivery>(SQL.get, [id])) ?? null,
    attempts: async (id) => (await q.query<Attempt>(SQL.attempts, [id])).rows,
    list: createPgDeliveryList(q),
    byEvent: async (eventId) => (await q.query<Delivery>(SQL.byEvent, [eventId])).rows,
    byNotification: async (id, limit) => (await q.query<Delivery>(SQL.byNotification, [id, limit === undefined || limit < 0 ? null : limit])).rows,
    countsByNotification: async (id) => byStatus((await q.query<{ status: DeliveryStatus; n: number }>(SQL.countsByNotification, [id])).rows),
    pendingInGroup: async (groupKey, now) => (await q.query<Delivery>(SQL.byGroup, [groupKey, now])).rows,
    holdPending: async (ids, until, now) => (ids.length === 0 ? 0 : count(SQL.holdPending, [ids, until, now])),
    async carryGroupMember(id, outcome, a, now) {
      const statusCode = a.statusCode ?? null
      const error = outcome.kind === 'success' ? null : (a.error ?? null)
      const at = outcome.kind === 'retry' ? outcome.at : null
      return inPgTransaction(q, async (c) => {
        const row = (await c.query<{ status: DeliveryStatus; attempts: number }>(SQL.carryGroupMember, [id, outcome.kind, at, statusCode, error, now])).rows[0]
        if (!row) return null
        const logged = outcome.kind === 'retry' && row.status === 'dead' ? 'dead' : outcome.kind
        await c.query(SQL.insertAttempt, [id, row.attempts, a.startedAt, Math.max(0, Math.round(a.durationMs)), logged, statusCode, error, truncateBody(a.responseBody)])
        return row.status
      })
    },
    async redeliver(id, now) {
      if (((await one<{ n: number }>(SQL.redeliver, [id, now]))?.n ?? 0) > 0) {
        markDue()
        return 'ok'
      }
      if (!(await one(SQL.exists, [id]))) return 'not_found'
      return (await one(SQL.endpointGone, [id])) ? 'endpoint_unavailable' : 'not_eligible'
    },
    recover: (endpointId, since, until, now) =>
      inPgTransaction(q, async (c) => {
        const n = (await c.query(SQL.recover, [endpointId, since, until, now])).rowCount ?? 0
        if (n > 0) {
          await c.query(SQL.waitRecovered, [endpointId, now])
          markDue()
        }
        return n
      }),
    cancelForEndpoint: (endpointId, now) => count(SQL.finishPendingForEndpoint, [endpointId, 'cancelled', 'endpoint_deleted', now]),
    killPendingForEndpoint: (endpointId, error, now) => count(SQL.finishPendingForEndpoint, [endpointId, 'dead', error, now]),
    deferPendingForEndpoint: (endpointId, until, now) => count(SQL.deferPendingForEndpoint, [endpointId, until, now]),
    releaseHeldForEndpoint: async (endpointId, until, now) => (until > now ? count(SQL.releaseHeldForEndpoint, [endpointId, until, now]) : 0),
    countByStatus: async () => byStatus((await q.query<{ status: DeliveryStatus; n: number }>(SQL.countByStatus)).rows),
    queueDepth: async () => (await one<{ pending: number; in_flight: number }>(SQL.queueDepth, []))!,
    async pendingByEndpoint() {
      const out: Record<string, number> = {}
      for (const r of (await q.query<{ endpointId: string; n: number }>(SQL.pendingByEndpoint)).rows) out[r.endpointId] = r.n
      return out
    },
    oldestPendingAt: async () => (await one<{ t: number | null }>(SQL.oldestPending, []))!.t,
  }
}
