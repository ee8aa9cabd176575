import { decodeIdCursor, encodeCursor, pageById, type Page } from '../../lib/cursor.js'
import { SCAN_STATEMENT_LIMIT, scanForPage } from '../capped-scan.js'
import { statementCache, type Db } from './db.js'
import { DUE_KEY } from './delivery-claim-sql.js'
import type { Channel, Delivery, DeliveryFilter, DeliveryStatus } from '../deliveries.js'
import { DELIVERY_COLUMNS } from '../delivery-rows.js'

/** Each channel as the literal a list query may put in its SQL (only these five strings). */
const CHANNEL_LITERAL: Record<Channel, Channel> = { webhook: 'webhook', inbox: 'inbox', email: 'email', 'notify-webhook': 'notify-webhook', request: 'request' }
/** Each status as the literal a list query may put in its SQL (only these five strings). */
const STATUS_LITERAL: Record<DeliveryStatus, DeliveryStatus> = { pending: 'pending', in_flight: 'in_flight', success: 'success', dead: 'dead', cancelled: 'cancelled' }
/** The other `list` filters, in WHERE order, with their columns. */
const LIST_FILTERS = [
  ['endpointId', 'endpoint_id'],
  ['eventType', 'event_type'],
  ['eventId', 'event_id'],
  ['notificationId', 'notification_id'],
] as const

/**
 * True when no index narrows the list to its matching rows: an event type or the success status
 * (most rows, but after an outage the newest may all be dead), without an event or notification
 * id. Such a page checks rows one by one, at most LIST_SCAN_LIMIT of them (see scanQuery).
 * Queued statuses are not: their index is in due order, so any page sorts all of its rows
 * first, and one page that checks the type as it goes costs less than a capped scan per page.
 */
export function needsScan(f: DeliveryFilter): boolean {
  if (f.eventId || f.notificationId || f.status === 'pending' || f.status === 'in_flight') return false
  return Boolean(f.eventType) || f.status === 'success'
}

/**
 * The application filter. deliveries_app leaves out default's rows (a partial index), so another
 * application's condition names the index's own, and default's reads the table in id order.
 */
function appCondition(appId: string, where: string[], params: unknown[]): void {
  if (appId === 'default') where.push(`app_id = 'default'`)
  else {
    where.push(`app_id = ? AND app_id <> 'default'`)
    params.push(appId)
  }
}

/**
 * The SQL and parameters of one `list` page read through an index (exported for the
 * query-plan test). Newest first is the table's own order, but walking it for queued rows
 * passes every finished row newer than the oldest queued one (~270 ms per million), so queued
 * statuses are read from their partial indexes: pending ids from deliveries_due (or
 * deliveries_endpoint_due) alone, then only the page's rows (~0.2 µs per pending row); in-flight
 * rows (at most the concurrency cap) from deliveries_leases. Dead and cancelled rows have
 * partial indexes in id order.
 */
export function listQuery(f: DeliveryFilter): { sql: string; params: unknown[] } {
  const where: string[] = []
  const params: unknown[] = []
  // The status goes into the SQL as a literal (one of five, checked): a partial index is only
  // usable when the statement itself names its condition.
  if (f.status) where.push(`status = '${STATUS_LITERAL[f.status]}'`)
  const selective = f.eventId || f.notificationId
  // Pending rows of one endpoint come from deliveries_endpoint_due, keyed by DUE_KEY.
  const queued = f.status === 'pending' && !selective
  for (const [key, column] of LIST_FILTERS) {
    const v = f[key]
    if (v) {
      // A `#<channel>` key is no endpoint id: compared with the column, it matches nothing.
      where.push(`${key === 'endpointId' && queued && !String(v).startsWith('#') ? DUE_KEY() : column} = ?`)
      params.push(v)
    }
  }
  if (f.appId !== undefined) appCondition(f.appId, where, params)
  if (f.channel !== undefined) where.push(`channel = '${CHANNEL_LITERAL[f.channel]}'`)
  const after = decodeIdCursor(f.cursor)
  if (after) {
    where.push('id < ?')
    params.push(after)
  }
  params.push(f.limit + 1)
  const filter = where.length ? `WHERE ${where.join(' AND ')}` : ''
  if (queued) {
    // The index holds all the page needs, and only the page's rows are read.
    const index = f.endpointId ? 'deliveries_endpoint_due' : 'deliveries_due'
    const ids = `SELECT rowid FROM deliveries INDEXED BY ${index} ${filter} ORDER BY id DESC LIMIT ?`
    return { sql: `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE rowid IN (${ids}) ORDER BY id DESC`, params }
  }
  const index = f.status === 'in_flight' && !selective ? 'INDEXED BY deliveries_leases' : ''
  return { sql: `SELECT ${DELIVERY_COLUMNS} FROM deliveries ${index} ${filter} ORDER BY id DESC LIMIT ?`, params }
}

/**
 * The SQL and parameters of a page that `needsScan` (exported for the query-plan test): ids
 * newest first through the filters an index in id order serves (dead or cancelled status,
 * endpoint, cursor), at most LIST_SCAN_LIMIT, each with whether it matches the rest.
 */
export function scanQuery(f: DeliveryFilter): { sql: string; params: unknown[] } {
  const checks: string[] = []
  const params: unknown[] = []
  if (f.eventType) {
    checks.push('event_type = ?')
    params.push(f.eventType)
  }
  if (f.status === 'success') checks.push(`status = 'success'`)
  if (f.appId !== undefined) appCondition(f.appId, checks, params)
  if (f.channel !== undefined) checks.push(`channel = '${CHANNEL_LITERAL[f.channel]}'`)
  const where: string[] = []
  if (f.status && f.status !== 'success') where.push(`status = '${STATUS_LITERAL[f.status]}'`)
  if (f.endpointId) {
    where.push('endpoint_id = ?')
    params.push(f.endpointId)
  }
  const after = decodeIdCursor(f.cursor)
  if (after) {
    where.push('id < ?')
    params.push(after)
  }
  const filter = where.length ? `WHERE ${where.join(' AND ')}` : ''
  return { sql: `SELECT id, ${checks.join(' AND ')} AS hit FROM deliveries ${filter} ORDER BY id DESC LIMIT ${SCAN_STATEMENT_LIMIT}`, params }
}

/** Lists deliveries newest first: through an index, or by a capped scan when `needsScan`. */
export function createDeliveryList(db: Db): (f: DeliveryFilter) => Page<Delivery> {
  const statement = statementCache(db)
  const byIds = db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id DESC`)
  return (f) => {
    if (!needsScan(f)) {
      const { sql, params } = listQuery(f)
      return pageById(statement(sql).all(...params) as Delivery[], f.limit)
    }
    const { sql, params } = scanQuery(f)
    const { hits, resumeAfter } = scanForPage(statement(sql).raw(true).iterate(...params) as IterableIterator<[string, number]>, f.limit)
    const rows = hits.length === 0 ? [] : (byIds.all(JSON.stringify(hits)) as Delivery[])
    return resumeAfter === null ? pageById(rows, f.limit) : { data: rows, next_cursor: encodeCursor(resumeAfter) }
  }
}
