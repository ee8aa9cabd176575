/**
 * Durable HTTP requests on PostgreSQL: the `Async<RequestsStore>` of src/store/requests.ts (a
 * `request` delivery in the one queue, plus its target in `requests`).
 */
import type { Async } from '../contract.js'
import type { DeliveriesStore, Delivery, DeliveryStatus } from '../deliveries.js'
import { requestIdOf, type RequestRow, type RequestsStore, type RequestTarget } from '../requests.js'
import { decodeIdCursor, encodeCursor } from '../../lib/cursor.js'
import { byStatus } from './delivery-claim.js'
import { DELIVERY_COLUMNS } from './delivery-list.js'
import { quoteAliases } from './atomic.js'
import type { PgQueryable } from './queryable.js'

const TARGET_COLUMNS = quoteAliases(`r.method, r.url, r.headers, r.body, r.body_json AS bodyJson, r.signing_secret AS signingSecret,
  r.timeout_ms AS timeoutMs, r.retry_schedule AS retrySchedule`)
const ROW_COLUMNS = `${TARGET_COLUMNS}, ${quoteAliases(`r.app_id AS requestAppId, r.source, r.ref_id AS refId, r.dedup_key AS dedupKey,
  r.deliver_at AS deliverAt, r.created_at AS requestCreatedAt, r.delivery_id AS deliveryId`)}`
const D_COLUMNS = DELIVERY_COLUMNS.replace(/(^|,\s*)([a-z_]+)/g, '$1d.$2')

const SQL = {
  // A repeat of (app_id, dedup_key) by another node between the lookup and here stores nothing.
  insert: `INSERT INTO requests (delivery_id, app_id, method, url, headers, body, body_json, signing_secret, source, ref_id,
      dedup_key, timeout_ms, retry_schedule, deliver_at, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
    ON CONFLICT DO NOTHING`,
  byDedup: `SELECT delivery_id AS id FROM requests WHERE app_id = $1 AND dedup_key = $2`,
  dropDelivery: `DELETE FROM deliveries WHERE id = $1`,
  target: `SELECT ${TARGET_COLUMNS} FROM requests r WHERE r.delivery_id = $1`,
  get: `SELECT ${ROW_COLUMNS}, ${D_COLUMNS} FROM requests r JOIN deliveries d ON d.id = r.delivery_id WHERE r.delivery_id = $1`,
  cancel: `UPDATE deliveries SET status = 'cancelled', last_error = 'cancelled', claim_token = NULL, lease_until = NULL,
      completed_at = $2, updated_at = $2
    WHERE id = $1 AND channel = 'request' AND status = 'pending'`,
  cancelForApp: `UPDATE deliveries SET status = 'cancelled', last_error = 'app_deleted', claim_token = NULL, lease_until = NULL,
      completed_at = $2, updated_at = $2
    WHERE app_id = $1 AND app_id <> 'default' AND channel = 'request' AND status = 'pending'`,
  isRequest: `SELECT 1 FROM deliveries WHERE id = $1 AND channel = 'request'`,
  countByStatus: `SELECT status, count(*) AS n FROM deliveries WHERE channel = 'request' GROUP BY status`,
} as const

type RawTarget = Omit<RequestTarget, 'headers' | 'retrySchedule' | 'bodyJson'> & { headers: string; retrySchedule: string | null; bodyJson: number }
type RawRow = RawTarget & Delivery & {
  requestAppId: string
  source: string | null
  refId: string | null
  dedupKey: string | null
  deliverAt: number
  requestCreatedAt: number
  deliveryId: string
}

const target = (r: RawTarget): RequestTarget => ({
  method: r.method,
  url: r.url,
  headers: JSON.parse(r.headers) as Record<string, string>,
  body: r.body,
  bodyJson: r.bodyJson === 1,
  signingSecret: r.signingSecret,
  timeoutMs: r.timeoutMs,
  retrySchedule: r.retrySchedule === null ? null : (JSON.parse(r.retrySchedule) as number[]),
})

/** Maps one joined row (the same shape as SQLite's toRow). */
function toRow(r: RawRow): RequestRow {
  return {
    id: requestIdOf(r.deliveryId),
    appId: r.requestAppId,
    ...target(r),
    source: r.source,
    refId: r.refId,
    dedupKey: r.dedupKey,
    deliverAt: r.deliverAt,
    createdAt: r.requestCreatedAt,
    delivery: {
      id: r.id, channel: r.channel, eventId: r.eventId, endpointId: r.endpointId, notificationId: r.notificationId,
      recipient: r.recipient, eventType: r.eventType, orderingKey: r.orderingKey, payload: r.payload, groupKey: r.groupKey,
      status: r.status, attempts: r.attempts, maxAttempts: r.maxAttempts, nextAttemptAt: r.nextAttemptAt,
      claimToken: r.claimToken, leaseUntil: r.leaseUntil, lastStatusCode: r.lastStatusCode, lastError: r.lastError,
      createdAt: r.createdAt, updatedAt: r.updatedAt, completedAt: r.completedAt, targetKey: r.targetKey, appId: r.requestAppId,
    },
  }
}

/** Creates the requests family over `q`; enqueues go through `deliveries` (made over the same queryable). */
export function createPgRequestsStore(q: PgQueryable, deliveries: Async<DeliveriesStore>): Async<RequestsStore> {
  return {
    // Inside the caller's transaction (Store.tx), as on SQLite: on the pool itself the delivery
    // and its target are two commits, and a claim in between would find no target.
    async create(req, now) {
      const original = async (): Promise<string | undefined> =>
        req.dedupKey === null ? undefined : (await q.query<{ id: string }>(SQL.byDedup, [req.appId, req.dedupKey])).rows[0]?.id
      const existing = await original()
      if (existing !== undefined) return { deliveryId: existing, created: false }
      const { id } = await deliveries.enqueue(
        { channel: 'request', eventType: req.method, appId: req.appId ?? 'default', targetKey: req.targetKey, maxAttempts: req.maxAttempts, nextAttemptAt: req.deliverAt },
        now,
      )
      const { rowCount } = await q.query(SQL.insert, [
        id, req.appId, req.method, req.url, JSON.stringify(req.headers), req.body, req.bodyJson ? 1 : 0, req.signingSecret,
        req.source, req.refId, req.dedupKey, req.timeoutMs, req.retrySchedule === null ? null : JSON.stringify(req.retrySchedule),
        req.deliverAt, now,
      ])
      if (rowCount) return { deliveryId: id, created: true }
      // Another node stored the same (app_id, dedup_key) first: its request is the one.
      await q.query(SQL.dropDelivery, [id])
      return { deliveryId: (await original())!, created: false }
    },
    async target(deliveryId) {
      const r = (await q.query<RawTarget>(SQL.target, [deliveryId])).rows[0]
      return r ? target(r) : null
    },
    async get(deliveryId) {
      const r = (await q.query<RawRow>(SQL.get, [deliveryId])).rows[0]
      return r ? toRow(r) : null
    },
    async list(f) {
      const where: string[] = []
      const params: unknown[] = []
      if (f.appId !== undefined) where.push(`r.app_id = $${params.push(f.appId)}`)
      if (f.source !== undefined) where.push(`r.source = $${params.push(f.source)}`)
      if (f.refId !== undefined) where.push(`r.ref_id = $${params.push(f.refId)}`)
      if (f.status !== undefined) where.push(`d.status = $${params.push(f.status)}`)
      const after = decodeIdCursor(f.cursor, 'req')
      if (after) where.push(`r.delivery_id < $${params.push(`dlv_${after.slice(4)}`)}`)
      const filter = where.length ? `WHERE ${where.join(' AND ')}` : ''
      const sql = `SELECT ${ROW_COLUMNS}, ${D_COLUMNS} FROM requests r JOIN deliveries d ON d.id = r.delivery_id ${filter}
        ORDER BY r.delivery_id DESC LIMIT $${params.push(f.limit + 1)}`
      const rows = (await q.query<RawRow>(sql, params)).rows.map(toRow)
      if (rows.length <= f.limit) return { data: rows, next_cursor: null }
      const data = rows.slice(0, f.limit)
      return { data, next_cursor: encodeCursor(data[f.limit - 1]!.id) }
    },
    async cancel(deliveryId, now) {
      if (((await q.query(SQL.cancel, [deliveryId, now])).rowCount ?? 0) > 0) return 'ok'
      return (await q.query(SQL.isRequest, [deliveryId])).rows.length > 0 ? 'not_eligible' : 'not_found'
    },
    cancelForApp: async (appId, now) => (await q.query(SQL.cancelForApp, [appId, now])).rowCount ?? 0,
    isRequest: async (deliveryId) => (await q.query(SQL.isRequest, [deliveryId])).rows.length > 0,
    countByStatus: async () => byStatus((await q.query<{ status: DeliveryStatus; n: number }>(SQL.countByStatus)).rows),
  }
}
