import type { Statement } from 'better-sqlite3'
import type { Db } from './db.js'
import { newId } from '../lib/ids.js'
import { decodeCursor, encodeCursor, type Page } from '../lib/cursor.js'

/** Where a delivery is in its lifecycle (SPEC §2). */
export type DeliveryStatus = 'pending' | 'in_flight' | 'success' | 'dead' | 'cancelled'
/**
 * The channels that share the delivery queue. `webhook` rows go to an endpoint; `notify-webhook`
 * rows are a notification's webhook channel, which publishes a `notification.<topic>` event.
 */
export type Channel = 'webhook' | 'inbox' | 'email' | 'notify-webhook'

/** A delivery row, mapped to camelCase. */
export interface Delivery {
  id: string
  channel: Channel
  dedupKey: string
  eventId: string | null
  endpointId: string | null
  notificationId: string | null
  recipient: string | null
  eventType: string
  orderingKey: string | null
  payload: string | null
  groupKey: string | null
  status: DeliveryStatus
  attempts: number
  maxAttempts: number
  nextAttemptAt: number
  claimToken: string | null
  leaseUntil: number | null
  lastStatusCode: number | null
  lastError: string | null
  createdAt: number
  updatedAt: number
  completedAt: number | null
}

/** A row returned by `claimDue`: it holds a fresh claim token and a lease. */
export interface ClaimedDelivery extends Delivery {
  claimToken: string
  leaseUntil: number
}

/** What `enqueue` needs to create one delivery. */
export interface NewDelivery {
  channel: Channel
  dedupKey: string
  eventId?: string | null
  endpointId?: string | null
  notificationId?: string | null
  recipient?: string | null
  eventType: string
  orderingKey?: string | null
  payload?: string | null
  groupKey?: string | null
  maxAttempts: number
  nextAttemptAt: number
}

/** One logged attempt. */
export interface AttemptRecord {
  startedAt: number
  durationMs: number
  statusCode?: number | null
  error?: string | null
  responseBody?: string | null
}

/** An attempt row as stored. */
export interface Attempt extends Required<AttemptRecord> {
  id: number
  deliveryId: string
  attempt: number
  outcome: string
}

/** How one claimed attempt ended (SPEC §2 outcome table). */
export type Outcome =
  | { kind: 'success' }
  | { kind: 'retry'; at: number }
  | { kind: 'dead' }
  | { kind: 'snooze'; at: number }
  | { kind: 'release' }

/** One entry of a `settle` batch. */
export interface SettleInput {
  id: string
  claimToken: string
  outcome: Outcome
  /** The attempt to log; omit when nothing was sent (release, or a snooze before sending). */
  attempt?: AttemptRecord
}

/** The result of one settle entry: `missed` when the token no longer matches. */
export type SettleResult = { result: 'settled'; status: DeliveryStatus; attempts: number } | { result: 'missed' }

/** Options for `claimDue`. */
export interface ClaimOptions {
  limit: number
  now: number
  /** Default request timeout for rows without an endpoint (inbox, email). */
  defaultTimeoutMs: number
  /** Added to the timeout to make the lease; SPEC §1 requires at least 15 s. */
  leaseMarginMs?: number
  /** Remaining slots per endpoint (concurrency, rate tokens, half-open probe); absent = unlimited. */
  capacity?: (endpointId: string) => number
  /** Endpoints to skip entirely this round (saturated). */
  excludeEndpoints?: readonly string[]
}

/** Filters for `list`. */
export interface DeliveryFilter {
  status?: DeliveryStatus
  endpointId?: string
  eventType?: string
  eventId?: string
  notificationId?: string
  limit: number
  cursor?: string | null
}

/** The lease margin: a request is never re-claimed while in flight (SPEC §1, >= 15 s). */
export const LEASE_MARGIN_MS = 30_000
/** Stored response bodies are capped at 16 KiB (SPEC §2). */
export const RESPONSE_BODY_LIMIT = 16 * 1024

const COLUMNS = `id, channel, dedup_key AS dedupKey, event_id AS eventId, endpoint_id AS endpointId,
  notification_id AS notificationId, recipient, event_type AS eventType, ordering_key AS orderingKey,
  payload, group_key AS groupKey, status, attempts, max_attempts AS maxAttempts,
  next_attempt_at AS nextAttemptAt, claim_token AS claimToken, lease_until AS leaseUntil,
  last_status_code AS lastStatusCode, last_error AS lastError, created_at AS createdAt,
  updated_at AS updatedAt, completed_at AS completedAt`

const SQL = {
  insert: `INSERT INTO deliveries (id, channel, dedup_key, event_id, endpoint_id, notification_id, recipient,
      event_type, ordering_key, payload, group_key, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
    VALUES (@id, @channel, @dedupKey, @eventId, @endpointId, @notificationId, @recipient, @eventType, @orderingKey,
      @payload, @groupKey, 'pending', 0, @maxAttempts, @nextAttemptAt, @now, @now)
    ON CONFLICT (dedup_key) DO NOTHING RETURNING id`,
  idByDedup: `SELECT id FROM deliveries WHERE dedup_key = ?`,
  expireLeases: `UPDATE deliveries
      SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'lease_expired' ELSE last_error END,
          completed_at = CASE WHEN attempts >= max_attempts THEN @now ELSE NULL END,
          claim_token = NULL, lease_until = NULL, next_attempt_at = @now, updated_at = @now
    WHERE status = 'in_flight' AND lease_until <= @now`,
  candidates: `SELECT d.id, d.endpoint_id AS endpointId, d.attempts >= d.max_attempts AS exhausted
    FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
    WHERE d.status = 'pending' AND d.next_attempt_at <= @now
      AND (d.endpoint_id IS NULL OR (e.disabled = 0 AND e.deleted_at IS NULL
           AND (e.paused_until IS NULL OR e.paused_until <= @now)
           AND d.endpoint_id NOT IN (SELECT value FROM json_each(@exclude))))
      AND (d.ordering_key IS NULL OR e.ordered IS NOT 1 OR NOT EXISTS (
           SELECT 1 FROM deliveries o
            WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key
              AND o.status IN ('pending', 'in_flight') AND o.id < d.id))
    ORDER BY d.next_attempt_at, d.id
    LIMIT @scan`,
  markExhausted: `UPDATE deliveries SET status = 'dead', last_error = COALESCE(last_error, 'attempts_exhausted'),
      claim_token = NULL, completed_at = @now, updated_at = @now
    WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending'`,
  claim: `UPDATE deliveries
      SET status = 'in_flight', claim_token = lower(hex(randomblob(12))), attempts = attempts + 1, updated_at = @now,
          lease_until = @now + @margin + COALESCE((SELECT timeout_ms FROM endpoints WHERE id = deliveries.endpoint_id), @defaultTimeout)
    WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending'
    RETURNING ${COLUMNS}`,
  settle: `UPDATE deliveries
      SET status = CASE @kind
            WHEN 'success' THEN 'success'
            WHEN 'dead' THEN 'dead'
            WHEN 'retry' THEN CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END
            ELSE 'pending' END,
          attempts = CASE WHEN @kind IN ('snooze', 'release') THEN max(attempts - 1, 0) ELSE attempts END,
          next_attempt_at = COALESCE(@at, next_attempt_at),
          claim_token = NULL, lease_until = NULL,
          last_status_code = COALESCE(@statusCode, last_status_code),
          last_error = CASE WHEN @kind = 'success' THEN NULL WHEN @kind IN ('snooze', 'release') THEN last_error ELSE @error END,
          completed_at = CASE WHEN @kind IN ('success', 'dead') OR (@kind = 'retry' AND attempts >= max_attempts) THEN @now ELSE NULL END,
          updated_at = @now
    WHERE id = @id AND claim_token = @token AND status = 'in_flight'
    RETURNING status, attempts`,
  insertAttempt: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    VALUES (@deliveryId, @attempt, @startedAt, @durationMs, @outcome, @statusCode, @error, @responseBody)`,
  get: `SELECT ${COLUMNS} FROM deliveries WHERE id = ?`,
  attempts: `SELECT id, delivery_id AS deliveryId, attempt, started_at AS startedAt, duration_ms AS durationMs, outcome,
      status_code AS statusCode, error, response_body AS responseBody
    FROM attempts WHERE delivery_id = ? ORDER BY id`,
  redeliver: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = @now, claim_token = NULL,
      lease_until = NULL, completed_at = NULL, updated_at = @now
    WHERE id = @id AND status IN ('success', 'dead', 'cancelled')`,
  recover: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = @now, claim_token = NULL,
      lease_until = NULL, completed_at = NULL, updated_at = @now
    WHERE endpoint_id = @endpointId AND status = 'dead' AND created_at >= @since AND created_at < @until`,
  finishPendingForEndpoint: `UPDATE deliveries SET status = @status, last_error = @error, claim_token = NULL,
      completed_at = @now, updated_at = @now
    WHERE endpoint_id = @endpointId AND status = 'pending'`,
  countByStatus: `SELECT status, count(*) AS n FROM deliveries GROUP BY status`,
  oldestPending: `SELECT min(next_attempt_at) AS t FROM deliveries WHERE status = 'pending'`,
  byEvent: `SELECT ${COLUMNS} FROM deliveries WHERE event_id = ? ORDER BY id`,
  byNotification: `SELECT ${COLUMNS} FROM deliveries WHERE notification_id = ? ORDER BY id`,
  byGroup: `SELECT ${COLUMNS} FROM deliveries WHERE group_key = ? AND status = 'pending' ORDER BY id`,
  finishGroupMember: `UPDATE deliveries SET status = @status, last_error = @error, claim_token = NULL,
      completed_at = @now, updated_at = @now
    WHERE id = @id AND status = 'pending'`,
} as const

/** The delivery queue: enqueue, claim, settle and the operator actions, as plain functions. */
export interface DeliveriesStore {
  enqueue(row: NewDelivery, now: number): { id: string; created: boolean }
  claimDue(opts: ClaimOptions): ClaimedDelivery[]
  settle(results: readonly SettleInput[], now: number): SettleResult[]
  get(id: string): Delivery | null
  attempts(id: string): Attempt[]
  list(filter: DeliveryFilter): Page<Delivery>
  byEvent(eventId: string): Delivery[]
  byNotification(notificationId: string): Delivery[]
  pendingInGroup(groupKey: string): Delivery[]
  finishGroupMember(id: string, status: 'success' | 'dead', error: string | null, now: number): boolean
  redeliver(id: string, now: number): 'ok' | 'not_found' | 'not_eligible'
  recover(endpointId: string, since: number, until: number, now: number): number
  cancelForEndpoint(endpointId: string, now: number): number
  killPendingForEndpoint(endpointId: string, error: string, now: number): number
  countByStatus(): Record<DeliveryStatus, number>
  oldestPendingAt(): number | null
}

/** Truncates a response body to the 16 KiB the attempt log keeps. */
export function truncateBody(body: string | null | undefined): string | null {
  if (body === null || body === undefined) return null
  if (body.length <= RESPONSE_BODY_LIMIT) return body
  return body.slice(0, RESPONSE_BODY_LIMIT)
}

/**
 * Creates the delivery store over a connection. `onDue` is called (synchronously) whenever an
 * enqueue or state change makes a row due now; the Store turns that into a wake after commit.
 */
export function createDeliveriesStore(db: Db, onDue: () => void = () => {}): DeliveriesStore {
  const s = Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, db.prepare(v)])) as {
    [K in keyof typeof SQL]: Statement
  }

  const claimTx = db.transaction((opts: ClaimOptions): ClaimedDelivery[] => {
    const { now, limit } = opts
    s.expireLeases.run({ now })
    const scan = Math.max(limit * 4, 64)
    const rows = s.candidates.all({ now, scan, exclude: JSON.stringify(opts.excludeEndpoints ?? []) }) as {
      id: string
      endpointId: string | null
      exhausted: number
    }[]
    const exhausted: string[] = []
    const chosen: string[] = []
    const taken = new Map<string, number>()
    for (const r of rows) {
      if (r.exhausted) {
        exhausted.push(r.id)
        continue
      }
      if (chosen.length >= limit) continue
      if (r.endpointId !== null && opts.capacity) {
        const used = taken.get(r.endpointId) ?? 0
        if (used >= opts.capacity(r.endpointId)) continue
        taken.set(r.endpointId, used + 1)
      }
      chosen.push(r.id)
    }
    if (exhausted.length > 0) s.markExhausted.run({ ids: JSON.stringify(exhausted), now })
    if (chosen.length === 0) return []
    const claimed = s.claim.all({
      ids: JSON.stringify(chosen),
      now,
      margin: Math.max(opts.leaseMarginMs ?? LEASE_MARGIN_MS, 15_000),
      defaultTimeout: opts.defaultTimeoutMs,
    }) as ClaimedDelivery[]
    // RETURNING order is unspecified; keep the claim order (due time, then enqueue order).
    const pos = new Map(chosen.map((id, i) => [id, i]))
    return claimed.sort((a, b) => pos.get(a.id)! - pos.get(b.id)!)
  })

  const settleTx = db.transaction((results: readonly SettleInput[], now: number): SettleResult[] => {
    let due = false
    const out = results.map((r): SettleResult => {
      const o = r.outcome
      const at = o.kind === 'retry' || o.kind === 'snooze' ? o.at : o.kind === 'release' ? now : null
      const row = s.settle.get({
        id: r.id,
        token: r.claimToken,
        kind: o.kind,
        at,
        now,
        statusCode: r.attempt?.statusCode ?? null,
        error: r.attempt?.error ?? null,
      }) as { status: DeliveryStatus; attempts: number } | undefined
      if (!row) return { result: 'missed' }
      if (row.status === 'pending' && at !== null && at <= now) due = true
      if (r.attempt) {
        s.insertAttempt.run({
          deliveryId: r.id,
          attempt: o.kind === 'snooze' ? row.attempts + 1 : row.attempts,
          startedAt: r.attempt.startedAt,
          durationMs: Math.max(0, Math.round(r.attempt.durationMs)),
          outcome: o.kind === 'retry' && row.status === 'dead' ? 'dead' : o.kind,
          statusCode: r.attempt.statusCode ?? null,
          error: r.attempt.error ?? null,
          responseBody: truncateBody(r.attempt.responseBody),
        })
      }
      return { result: 'settled', status: row.status, attempts: row.attempts }
    })
    if (due) onDue()
    return out
  })

  return {
    enqueue(row, now) {
      const id = newId('dlv', now)
      const inserted = s.insert.get({
        id,
        channel: row.channel,
        dedupKey: row.dedupKey,
        eventId: row.eventId ?? null,
        endpointId: row.endpointId ?? null,
        notificationId: row.notificationId ?? null,
        recipient: row.recipient ?? null,
        eventType: row.eventType,
        orderingKey: row.orderingKey ?? null,
        payload: row.payload ?? null,
        groupKey: row.groupKey ?? null,
        maxAttempts: row.maxAttempts,
        nextAttemptAt: row.nextAttemptAt,
        now,
      }) as { id: string } | undefined
      if (inserted) {
        if (row.nextAttemptAt <= now) onDue()
        return { id: inserted.id, created: true }
      }
      const existing = s.idByDedup.get(row.dedupKey) as { id: string }
      return { id: existing.id, created: false }
    },
    claimDue: (opts) => claimTx.immediate(opts),
    settle: (results, now) => (results.length === 0 ? [] : settleTx.immediate(results, now)),
    get: (id) => (s.get.get(id) as Delivery | undefined) ?? null,
    attempts: (id) => s.attempts.all(id) as Attempt[],
    list(f) {
      const where: string[] = []
      const params: unknown[] = []
      if (f.status) {
        where.push('status = ?')
        params.push(f.status)
      }
      if (f.endpointId) {
        where.push('endpoint_id = ?')
        params.push(f.endpointId)
      }
      if (f.eventType) {
        where.push('event_type = ?')
        params.push(f.eventType)
      }
      if (f.eventId) {
        where.push('event_id = ?')
        params.push(f.eventId)
      }
      if (f.notificationId) {
        where.push('notification_id = ?')
        params.push(f.notificationId)
      }
      const after = decodeCursor(f.cursor)
      if (after) {
        where.push('id < ?')
        params.push(after)
      }
      const sql = `SELECT ${COLUMNS} FROM deliveries ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`
      const rows = db.prepare(sql).all(...params, f.limit + 1) as Delivery[]
      const more = rows.length > f.limit
      const data = more ? rows.slice(0, f.limit) : rows
      return { data, next_cursor: more ? encodeCursor(data[data.length - 1]!.id) : null }
    },
    byEvent: (eventId) => s.byEvent.all(eventId) as Delivery[],
    byNotification: (id) => s.byNotification.all(id) as Delivery[],
    pendingInGroup: (groupKey) => s.byGroup.all(groupKey) as Delivery[],
    finishGroupMember: (id, status, error, now) => s.finishGroupMember.run({ id, status, error, now }).changes > 0,
    redeliver(id, now) {
      if (s.redeliver.run({ id, now }).changes > 0) {
        onDue()
        return 'ok'
      }
      return s.get.get(id) ? 'not_eligible' : 'not_found'
    },
    recover(endpointId, since, until, now) {
      const n = s.recover.run({ endpointId, since, until, now }).changes
      if (n > 0) onDue()
      return n
    },
    cancelForEndpoint: (endpointId, now) =>
      s.finishPendingForEndpoint.run({ endpointId, status: 'cancelled', error: 'endpoint_deleted', now }).changes,
    killPendingForEndpoint: (endpointId, error, now) =>
      s.finishPendingForEndpoint.run({ endpointId, status: 'dead', error, now }).changes,
    countByStatus() {
      const out: Record<DeliveryStatus, number> = { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 }
      for (const r of s.countByStatus.all() as { status: DeliveryStatus; n: number }[]) out[r.status] = r.n
      return out
    },
    oldestPendingAt: () => (s.oldestPending.get() as { t: number | null }).t,
  }
}
