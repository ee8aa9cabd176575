import type { Delivery } from '../store/deliveries.js'
import { isPlainObject, parseJsonOr } from '../lib/json.js'

/** The JSON a notification delivery carries: everything its channel needs to send it. */
export interface DeliveryPayload {
  notification_id: string
  topic: string
  title: string
  body: string
  format: 'text' | 'markdown' | 'html'
  severity: string
  action_url: string | null
  payload: Record<string, unknown>
  /** The notification's tags (none when absent) and application (`default` when absent). */
  tags?: string[]
  app_id?: string
  recipient: { id: string; email: string | null; name: string | null; locale: string | null; external: boolean }
}

/** What `encodePayload` stores: a payload without the fields its delivery row holds. */
export type StoredPayload = Omit<DeliveryPayload, 'notification_id' | 'topic' | 'recipient'> & {
  recipient: Omit<DeliveryPayload['recipient'], 'id'>
}

/** The delivery columns a stored payload leaves out because the row already holds them. */
export type PayloadRow = Pick<Delivery, 'notificationId' | 'recipient' | 'eventType'>

/**
 * The stored form of a payload. Fields the delivery row already holds (notification id,
 * recipient id, topic) and fields at their default (empty body, text format, info severity,
 * no action URL, empty payload, null recipient details) are left out. A 1,000-recipient
 * fan-out writes, claims and settles 1,000 delivery rows, so every byte here is paid three
 * times in the WAL; the bare `{"title":"…"}` of a plain inbox notification keeps a row small.
 */
export function encodePayload(p: StoredPayload): string {
  const out: Record<string, unknown> = { title: p.title }
  if (p.body !== '') out.body = p.body
  if (p.format !== 'text') out.format = p.format
  if (p.severity !== 'info') out.severity = p.severity
  if (p.action_url !== null) out.action_url = p.action_url
  if (Object.keys(p.payload).length > 0) out.payload = p.payload
  if (p.tags && p.tags.length > 0) out.tags = p.tags
  if (p.app_id && p.app_id !== 'default') out.app_id = p.app_id
  const r = p.recipient
  if (r.email !== null || r.name !== null || r.locale !== null || r.external) {
    const rec: Record<string, unknown> = {}
    if (r.email !== null) rec.email = r.email
    if (r.name !== null) rec.name = r.name
    if (r.locale !== null) rec.locale = r.locale
    if (r.external) rec.external = true
    out.recipient = rec
  }
  return JSON.stringify(out)
}

const str = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback)
const strOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null)
const FORMATS = new Set(['text', 'markdown', 'html'])

/**
 * Reads a stored payload back into its full form, taking the left-out fields from the row.
 * Also reads the complete form written before payloads were compacted. Null when it is not a
 * notification payload.
 */
export function decodePayload(json: string | null, row: PayloadRow): DeliveryPayload | null {
  const p = parseJsonOr<unknown>(json, null)
  if (!isPlainObject(p) || typeof p.title !== 'string') return null
  const r = isPlainObject(p.recipient) ? p.recipient : {}
  const id = str(r.id, row.recipient ?? '')
  const notificationId = str(p.notification_id, row.notificationId ?? '')
  if (id === '' || notificationId === '') return null
  return {
    notification_id: notificationId,
    topic: str(p.topic, row.eventType),
    title: p.title,
    body: str(p.body, ''),
    format: (FORMATS.has(p.format as string) ? p.format : 'text') as DeliveryPayload['format'],
    severity: str(p.severity, 'info'),
    action_url: strOrNull(p.action_url),
    payload: isPlainObject(p.payload) ? p.payload : {},
    ...(Array.isArray(p.tags) ? { tags: p.tags.filter((t): t is string => typeof t === 'string') } : {}),
    ...(typeof p.app_id === 'string' ? { app_id: p.app_id } : {}),
    recipient: { id, email: strOrNull(r.email), name: strOrNull(r.name), locale: strOrNull(r.locale), external: r.external === true },
  }
}
