/** Lists of deliveries on PostgreSQL (the `list` of src/store/sqlite/delivery-list.ts), and the column lists the PG families share. */
import { decodeIdCursor, pageById, type Page } from '../../lib/cursor.js'
import { DELIVERY_COLUMNS as SQLITE_DELIVERY_COLUMNS } from '../delivery-rows.js'
import type { Channel, Delivery, DeliveryFilter, DeliveryStatus } from '../deliveries.js'
import type { PgQueryable } from './queryable.js'
import { quoteAliases } from './atomic.js'

/** The columns of a delivery row under the names `Delivery` gives them (SQLite's list, aliases quoted). */
export const DELIVERY_COLUMNS = quoteAliases(SQLITE_DELIVERY_COLUMNS)

const CHANNELS: readonly Channel[] = ['webhook', 'inbox', 'email', 'notify-webhook', 'request']
const STATUSES: readonly DeliveryStatus[] = ['pending', 'in_flight', 'success', 'dead', 'cancelled']

/**
 * The SQL and parameters of one `list` page, newest first. PostgreSQL's planner picks the partial
 * indexes from the literal status itself, so one statement serves every filter: no capped scan as
 * SQLite's (a rare event type among millions of rows costs this page a longer index walk instead).
 */
export function pgListQuery(f: DeliveryFilter): { sql: string; params: unknown[] } {
  const where: string[] = []
  const params: unknown[] = []
  if (f.status) {
    if (!STATUSES.includes(f.status)) throw new Error(`unknown delivery status ${String(f.status)}`)
    where.push(`status = '${f.status}'`)
  }
  if (f.endpointId) where.push(`endpoint_id = $${params.push(f.endpointId)}`)
  if (f.eventType) where.push(`event_type = $${params.push(f.eventType)}`)
  if (f.eventId) where.push(`event_id = $${params.push(f.eventId)}`)
  if (f.notificationId) where.push(`notification_id = $${params.push(f.notificationId)}`)
  if (f.appId !== undefined) where.push(f.appId === 'default' ? `app_id = 'default'` : `app_id = $${params.push(f.appId)} AND app_id <> 'default'`)
  if (f.channel !== undefined) {
    if (!CHANNELS.includes(f.channel)) throw new Error(`unknown channel ${String(f.channel)}`)
    where.push(`channel = '${f.channel}'`)
  }
  const after = decodeIdCursor(f.cursor)
  if (after) where.push(`id < $${params.push(after)}`)
  const filter = where.length ? `WHERE ${where.join(' AND ')}` : ''
  return { sql: `SELECT ${DELIVERY_COLUMNS} FROM deliveries ${filter} ORDER BY id DESC LIMIT $${params.push(f.limit + 1)}`, params }
}

/** Lists deliveries newest first over `q`. */
export function createPgDeliveryList(q: PgQueryable): (f: DeliveryFilter) => Promise<Page<Delivery>> {
  return async (f) => {
    const { sql, params } = pgListQuery(f)
    return pageById((await q.query<Delivery>(sql, params)).rows, f.limit)
  }
}
