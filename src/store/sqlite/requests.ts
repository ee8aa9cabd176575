/**
 * Durable HTTP requests (docs/requests.md): a `request` delivery in the one queue, plus its
 * target in the `requests` table, copied at enqueue and never changed. The public id is `req_`
 * followed by the delivery id's suffix, so either id gives the other without a lookup.
 */
import { decodeIdCursor, encodeCursor } from '../../lib/cursor.js'
import { prepareAll, statementCache, type Db } from './db.js'
import { DELIVERY_COLUMNS } from '../delivery-rows.js'
import type { DeliveriesStore, Delivery, DeliveryStatus } from '../deliveries.js'
import { requestIdOf, type RequestFilter, type RequestRow, type RequestTarget, type RequestsStore } from '../requests.js'

const TARGET_COLUMNS = `r.method, r.url, r.headers, r.body, r.body_json AS bodyJson, r.signing_secret AS signingSecret,
  r.timeout_ms AS timeoutMs, r.retry_schedule AS retrySchedule`
const ROW_COLUMNS = `${TARGET_COLUMNS}, r.app_id AS appId, r.source, r.ref_id AS refId, r.dedup_key AS dedupKey,
  r.deliver_at AS deliverAt, r.created_at AS requestCreatedAt, r.delivery_id AS deliveryId`
const D_COLUMNS = DELIVERY_COLUMNS.replace(/(^|,\s*)([a-z_]+)/g, '$1d.$2')

const SQL = {
  insert: `INSERT INTO requests (delivery_id, app_id, method, url, headers, body, body_json, signing_secret, source, ref_id,
      dedup_key, timeout_ms, retry_schedule, deliver_at, created_at)
    VALUES (@deliveryId, @appId, @method, @url, @headers, @body, @bodyJson, @signingSecret, @source, @refId,
      @dedupKey, @timeoutMs, @retrySchedule, @deliverAt, @now)`,
  byDedup: `SELECT delivery_id FROM requests WHERE app_id = ? AND dedup_key = ?`,
  target: `SELECT ${TARGET_COLUMNS} FROM requests r WHERE r.delivery_id = ?`,
  get: `SELECT ${ROW_COLUMNS}, ${D_COLUMNS} FROM requests r JOIN deliveries d ON d.id = r.delivery_id WHERE r.delivery_id = ?`,
  // Only a pending row (never one in flight: its request may be on the wire).
  cancel: `UPDATE deliveries SET status = 'cancelled', last_error = 'cancelled', claim_token = NULL, lease_until = NULL,
      completed_at = @now, updated_at = @now
    WHERE id = @id AND channel = 'request' AND status = 'pending'`,
  // A deleted application's queued requests; one in flight settles as its attempt ends.
  cancelForApp: `UPDATE deliveries SET status = 'cancelled', last_error = 'app_deleted', claim_token = NULL, lease_until = NULL,
      completed_at = @now, updated_at = @now
    WHERE app_id = @appId AND app_id <> 'default' AND channel = 'request' AND status = 'pending'`,
  isRequest: `SELECT 1 FROM deliveries WHERE id = ? AND channel = 'request'`,
  countByStatus: `SELECT status, count(*) AS n FROM deliveries WHERE channel = 'request' GROUP BY status`,
} as const

type RawRow = Omit<RequestRow, 'id' | 'headers' | 'retrySchedule' | 'bodyJson' | 'delivery' | 'createdAt'> & {
  deliveryId: string
  requestCreatedAt: number
  headers: string
  retrySchedule: string | null
  bodyJson: number
} & Delivery

/** Maps one joined row. */
function toRow(r: RawRow): RequestRow {
  return {
    id: requestIdOf(r.deliveryId),
    appId: r.appId,
    method: r.method,
    url: r.url,
    headers: JSON.parse(r.headers) as Record<string, string>,
    body: r.body,
    bodyJson: r.bodyJson === 1,
    signingSecret: r.signingSecret,
    timeoutMs: r.timeoutMs,
    retrySchedule: r.retrySchedule === null ? null : (JSON.parse(r.retrySchedule) as number[]),
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
      createdAt: r.createdAt, updatedAt: r.updatedAt, completedAt: r.completedAt, targetKey: r.targetKey, appId: r.appId,
    },
  }
}

/**
 * The SQL and parameters of one `list` page, newest first (exported for the query-plan test).
 * The label filters read their own index (app, source, ref_id); the status is checked on the
 * joined delivery row as the page is read.
 */
export function requestListQuery(f: RequestFilter): { sql: string; params: unknown[] } {
  const where: string[] = []
  const params: unknown[] = []
  if (f.appId !== undefined) {
    where.push('r.app_id = ?')
    params.push(f.appId)
  }
  if (f.source !== undefined) {
    where.push('r.source = ?')
    params.push(f.source)
  }
  if (f.refId !== undefined) {
    where.push('r.ref_id = ?')
    params.push(f.refId)
  }
  if (f.status !== undefined) {
    where.push('d.status = ?')
    params.push(f.status)
  }
  const after = decodeIdCursor(f.cursor, 'req')
  if (after) {
    where.push('r.delivery_id < ?')
    params.push(`dlv_${after.slice(4)}`)
  }
  params.push(f.limit + 1)
  const filter = where.length ? `WHERE ${where.join(' AND ')}` : ''
  return {
    sql: `SELECT ${ROW_COLUMNS}, ${D_COLUMNS} FROM requests r JOIN deliveries d ON d.id = r.delivery_id ${filter}
      ORDER BY r.delivery_id DESC LIMIT ?`,
    params,
  }
}

/** Creates the requests store over a connection; enqueues go through `deliveries`. */
export function createRequestsStore(db: Db, deliveries: DeliveriesStore): RequestsStore {
  const s = prepareAll(db, SQL)
  const statement = statementCache(db)
  const byDedup = s.byDedup.pluck()
  const isRequest = s.isRequest.pluck()
  return {
    create(req, now) {
      if (req.dedupKey !== null) {
        const existing = byDedup.get(req.appId, req.dedupKey) as string | undefined
        if (existing !== undefined) return { deliveryId: existing, created: false }
      }
      const { id } = deliveries.enqueue(
        { channel: 'request', eventType: req.method, appId: req.appId ?? 'default', targetKey: req.targetKey, maxAttempts: req.maxAttempts, nextAttemptAt: req.deliverAt },
        now,
      )
      s.insert.run({
        deliveryId: id,
        appId: req.appId,
        method: req.method,
        url: req.url,
        headers: JSON.stringify(req.headers),
        body: req.body,
        bodyJson: req.bodyJson ? 1 : 0,
        signingSecret: req.signingSecret,
        source: req.source,
        refId: req.refId,
        dedupKey: req.dedupKey,
        timeoutMs: req.timeoutMs,
        retrySchedule: req.retrySchedule === null ? null : JSON.stringify(req.retrySchedule),
        deliverAt: req.deliverAt,
        now,
      })
      return { deliveryId: id, created: true }
    },
    target(deliveryId) {
      const r = s.target.get(deliveryId) as (Omit<RequestTarget, 'headers' | 'retrySchedule' | 'bodyJson'> & { headers: string; retrySchedule: string | null; bodyJson: number }) | undefined
      if (!r) return null
      return {
        ...r,
        headers: JSON.parse(r.headers) as Record<string, string>,
        bodyJson: r.bodyJson === 1,
        retrySchedule: r.retrySchedule === null ? null : (JSON.parse(r.retrySchedule) as number[]),
      }
    },
    get(deliveryId) {
      const r = s.get.get(deliveryId) as RawRow | undefined
      return r ? toRow(r) : null
    },
    list(f) {
      const { sql, params } = requestListQuery(f)
      const rows = (statement(sql).all(...params) as RawRow[]).map(toRow)
      if (rows.length <= f.limit) return { data: rows, next_cursor: null }
      const data = rows.slice(0, f.limit)
      return { data, next_cursor: encodeCursor(data[f.limit - 1]!.id) }
    },
    cancel(deliveryId, now) {
      if (s.cancel.run({ id: deliveryId, now }).changes > 0) return 'ok'
      return isRequest.get(deliveryId) ? 'not_eligible' : 'not_found'
    },
    cancelForApp: (appId, now) => s.cancelForApp.run({ appId, now }).changes,
    isRequest: (deliveryId) => isRequest.get(deliveryId) !== undefined,
    countByStatus() {
      const out: Record<DeliveryStatus, number> = { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 }
      for (const r of s.countByStatus.all() as { status: DeliveryStatus; n: number }[]) out[r.status] = r.n
      return out
    },
  }
}
