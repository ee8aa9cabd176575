import { multiRow, prepareAll, tuples, type Db } from './db.js'
import { newId } from '../../lib/ids.js'
import { createDeliveryList } from './delivery-list.js'
import { DELIVERY_COLUMNS, ROW_ATTEMPT } from '../delivery-rows.js'
import { createClaimer } from './delivery-claim.js'
import { createPullClaimer } from './pull-claim.js'
import { DUE_KEY, WAITS_IN_ORDER } from './delivery-claim-sql.js'
import { createSettler, INSERT_ATTEMPT } from './delivery-settle.js'
import { dueKey, truncateBody, WAITING_IN_ORDER, type Attempt, type DeliveriesStore, type Delivery, type DeliveryStatus, type NewDelivery } from '../deliveries.js'

const COLUMNS = DELIVERY_COLUMNS


// A repeat hits one of the unique indexes deliveries_event or deliveries_notification
// (schema.sql); naming both keeps any other conflict (an id) an error rather than a no-op.
/** The enqueue statement for n rows (db.ts multiRow); positional, in `enqueueArgs` order. */
const INSERT_ROWS = (n: number): string => `INSERT INTO deliveries (id, channel, event_id, endpoint_id, notification_id, recipient,
      event_type, ordering_key, payload, group_key, status, attempts, max_attempts, next_attempt_at, created_at, updated_at, app_id, target_key)
    VALUES ${tuples(n, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?)")}
    ON CONFLICT (event_id, endpoint_id) WHERE event_id IS NOT NULL DO NOTHING
    ON CONFLICT (notification_id, recipient, channel) WHERE notification_id IS NOT NULL DO NOTHING`


/** The row @id, if a redeliver may take it: finished, and its endpoint (if any) live and enabled. */
const REDELIVERABLE = `id = @id AND status IN ('success', 'dead', 'cancelled')
      AND (endpoint_id IS NULL OR EXISTS (SELECT 1 FROM endpoints e WHERE e.id = deliveries.endpoint_id AND e.disabled = 0 AND e.deleted_at IS NULL))`

const SQL = {
  insert: INSERT_ROWS(1),
  // A notification row that is finished when it is written (an inbox message written in the same
  // transaction): never due, never claimed; a repeat hits deliveries_notification, as insert's.
  insertDelivered: `INSERT INTO deliveries (id, channel, event_id, endpoint_id, notification_id, recipient,
      event_type, ordering_key, payload, group_key, status, attempts, max_attempts, next_attempt_at, created_at, updated_at, completed_at, app_id)
    VALUES (?, ?, NULL, NULL, ?, ?, ?, NULL, ?, ?, 'success', 1, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (notification_id, recipient, channel) WHERE notification_id IS NOT NULL DO NOTHING`,
  // Their one attempt each, as settleSuccessMany logs a success (attempt 1, no status code).
  logDelivered: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT value, 1, ?, ?, 'success', NULL, NULL, NULL FROM json_each(?)`,
  // A new row of an ordered endpoint waits while an older row of its ordering key is unfinished.
  waitsInOrder: `SELECT 1 FROM endpoints e WHERE e.id = ? AND e.ordered = 1 AND EXISTS (SELECT 1 FROM deliveries o
      WHERE o.endpoint_id = e.id AND o.ordering_key = ? AND o.status IN ('pending', 'in_flight') AND o.id < ?)`,
  idByEvent: `SELECT id FROM deliveries WHERE event_id = ? AND endpoint_id = ?`,
  idByNotification: `SELECT id FROM deliveries WHERE notification_id = ? AND recipient = ? AND channel = ?`,
  get: `SELECT ${COLUMNS} FROM deliveries WHERE id = ?`,
  // The attempts rows, then the success's attempt kept in the delivery row (always the last: a
  // redeliver moves it into attempts before the row is attempted again).
  attempts: `SELECT * FROM (SELECT id, delivery_id AS deliveryId, attempt, started_at AS startedAt, duration_ms AS durationMs,
      outcome, status_code AS statusCode, error, response_body AS responseBody
    FROM attempts WHERE delivery_id = @id
    UNION ALL
    SELECT 0, ${ROW_ATTEMPT} FROM deliveries WHERE id = @id AND success_started_at IS NOT NULL)
    ORDER BY id = 0, id`,
  // Before a redeliver: the success's attempt kept in the row becomes an attempts row (history is kept).
  moveRowAttempt: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT ${ROW_ATTEMPT} FROM deliveries WHERE ${REDELIVERABLE} AND success_started_at IS NOT NULL`,
  // A row redelivered behind an unfinished older row of its ordering key waits for its turn.
  redeliver: `UPDATE deliveries SET status = 'pending', attempts = 0, claim_token = NULL,
      next_attempt_at = CASE WHEN ${WAITS_IN_ORDER} THEN ${WAITING_IN_ORDER} ELSE @now END,
      lease_until = NULL, completed_at = NULL, updated_at = @now,
      success_started_at = NULL, success_duration_ms = NULL, success_body = NULL
    WHERE ${REDELIVERABLE}`,
  endpointGone: `SELECT 1 FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
    WHERE d.id = ? AND (e.disabled = 1 OR e.deleted_at IS NOT NULL)`,
  exists: `SELECT 1 FROM deliveries WHERE id = ?`,
  recover: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = @now, claim_token = NULL,
      lease_until = NULL, completed_at = NULL, updated_at = @now
    WHERE endpoint_id = @endpointId AND status = 'dead' AND created_at >= @since AND created_at < @until`,
  // Recovered rows of one ordering key would all be due at once, the newer ones blocked behind
  // the oldest: they wait instead, as the endpoints trigger sets them aside when ordered is set.
  waitRecovered: `UPDATE deliveries SET next_attempt_at = ${WAITING_IN_ORDER}
    WHERE endpoint_id = @endpointId AND status = 'pending' AND attempts = 0 AND next_attempt_at = @now AND ${WAITS_IN_ORDER}`,
  // Both read the endpoint's pending rows from deliveries_endpoint_due (INDEXED BY: never the
  // endpoint's whole history in deliveries_endpoint, which retention keeps up to 30 days long);
  // its key is the endpoint id for rows that have one.
  finishPendingForEndpoint: `UPDATE deliveries INDEXED BY deliveries_endpoint_due
      SET status = @status, last_error = @error, claim_token = NULL, completed_at = @now, updated_at = @now
    WHERE status = 'pending' AND ${DUE_KEY()} = @endpointId`,
  // Once per breaker pause.
  deferPendingForEndpoint: `UPDATE deliveries INDEXED BY deliveries_endpoint_due SET next_attempt_at = @until, updated_at = @now
    WHERE status = 'pending' AND ${DUE_KEY()} = @endpointId AND next_attempt_at < @until`,
  // When the breaker closes: the rows its pause held wait for nothing any more.
  releaseHeldForEndpoint: `UPDATE deliveries INDEXED BY deliveries_endpoint_due SET next_attempt_at = @now, updated_at = @now
    WHERE status = 'pending' AND ${DUE_KEY()} = @endpointId AND next_attempt_at = @until`,
  countByStatus: `SELECT status, count(*) AS n FROM deliveries GROUP BY status`,
  // From the partial indexes only: the finished rows are most of the table.
  countPending: `SELECT count(*) FROM deliveries INDEXED BY deliveries_due WHERE status = 'pending'`,
  countInFlight: `SELECT count(*) FROM deliveries INDEXED BY deliveries_leases WHERE status = 'in_flight'`,
  pendingByEndpoint: `SELECT endpoint_id AS endpointId, count(*) AS n FROM deliveries
    WHERE status = 'pending' AND endpoint_id IS NOT NULL GROUP BY endpoint_id`,
  oldestPending: `SELECT min(next_attempt_at) AS t FROM deliveries WHERE status = 'pending' AND next_attempt_at < ${WAITING_IN_ORDER}`,
  byEvent: `SELECT ${COLUMNS} FROM deliveries WHERE event_id = ? ORDER BY id`,
  byNotification: `SELECT ${COLUMNS} FROM deliveries WHERE notification_id = ? ORDER BY id LIMIT ?`,
  countsByNotification: `SELECT status, count(*) AS n FROM deliveries WHERE notification_id = ? GROUP BY status`,
  // Only members already due: one held back by its own quiet hours waits for them (docs/notifications-basics.md).
  byGroup: `SELECT ${COLUMNS} FROM deliveries WHERE group_key = ? AND status = 'pending' AND next_attempt_at <= ? ORDER BY id`,
  holdPending: `UPDATE deliveries SET next_attempt_at = @until, updated_at = @now
    WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending'`,
  // A digest member that went out in another delivery's message takes that attempt as its own,
  // as settle would: a retry that spends its last attempt is dead.
  carryGroupMember: `UPDATE deliveries SET attempts = attempts + 1,
      status = CASE WHEN @kind <> 'retry' THEN @kind WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'pending' END,
      next_attempt_at = CASE WHEN @kind = 'retry' THEN @at ELSE next_attempt_at END,
      last_status_code = CASE WHEN @kind = 'success' THEN @statusCode ELSE COALESCE(@statusCode, last_status_code) END,
      last_error = @error, claim_token = NULL,
      completed_at = CASE WHEN @kind = 'retry' AND attempts + 1 < max_attempts THEN NULL ELSE @now END, updated_at = @now
    WHERE id = @id AND status = 'pending' RETURNING status, attempts`,
} as const

/** Counts of `status, n` rows as one number per status, zero for those absent. */
function byStatus(rows: unknown[]): Record<DeliveryStatus, number> {
  const out: Record<DeliveryStatus, number> = { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 }
  for (const r of rows as { status: DeliveryStatus; n: number }[]) out[r.status] = r.n
  return out
}

/** Appends the positional arguments of one row of INSERT_ROWS. */
function enqueueArgs(args: unknown[], row: NewDelivery, id: string, waits: boolean, now: number): void {
  args.push(
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
    waits ? WAITING_IN_ORDER : row.nextAttemptAt,
    now,
    now,
    row.appId ?? 'default',
    row.targetKey ?? null,
  )
}


/**
 * Creates the delivery store over a connection. `onDue` is called (synchronously) whenever an
 * enqueue or state change makes a row due now; the SqliteStore turns that into a wake after commit.
 */
export function createDeliveriesStore(db: Db, onDue: () => void = () => {}): DeliveriesStore {
  const s = prepareAll(db, SQL)
  const claimer = createClaimer(db, onDue)
  const insertAttempt = db.prepare(INSERT_ATTEMPT)
  const idByEvent = s.idByEvent.pluck()
  const idByNotification = s.idByNotification.pluck()
  const countPending = s.countPending.pluck()
  const countInFlight = s.countInFlight.pluck()

  const redeliverTx = db.transaction((p: { id: string; now: number }): number => {
    s.moveRowAttempt.run({ id: p.id })
    return s.redeliver.run(p).changes
  })


  /** A row just inserted: due now unless it waits or is scheduled later. */
  const created = (row: NewDelivery, id: string, waits: boolean, now: number): { id: string; created: boolean } => {
    if (!waits && row.nextAttemptAt <= now) {
      claimer.noteDue(dueKey(row))
      onDue()
    }
    return { id, created: true }
  }
  /** A row not inserted: it repeats one of the two unique keys (a row may carry both); the stored row's id. */
  const repeated = (row: NewDelivery): { id: string; created: boolean } => {
    const existing =
      (row.eventId ? idByEvent.get(row.eventId, row.endpointId ?? null) : undefined) ??
      idByNotification.get(row.notificationId ?? null, row.recipient ?? null, row.channel)
    return { id: existing as string, created: false }
  }

  const enqueue = (row: NewDelivery, now: number): { id: string; created: boolean } => {
    // ON CONFLICT DO NOTHING without RETURNING: `changes` says whether this call won, and
    // skipping RETURNING measured ~20% faster per insert.
    const id = row.id ?? newId('dlv', now)
    const waits = row.orderingKey != null && row.endpointId != null && s.waitsInOrder.get(row.endpointId, row.orderingKey, id) !== undefined
    const args: unknown[] = []
    enqueueArgs(args, row, id, waits, now)
    return s.insert.run(...args).changes > 0 ? created(row, id, waits, now) : repeated(row)
  }

  /** A row of an enqueueMany batch: where it stands in the batch, and its new id. */
  type Unkeyed = { row: NewDelivery; id: string; at: number }
  const insertRows = multiRow(db, INSERT_ROWS, (rows: readonly Unkeyed[], from, n, now: number) => {
    const args: unknown[] = []
    for (let i = from; i < from + n; i++) enqueueArgs(args, rows[i]!.row, rows[i]!.id, false, now)
    return args
  })
  // Rows without an ordering key go in multi-row statements; a keyed row may wait behind an
  // earlier row of the batch, so the rows before it are written first and it goes alone. A
  // savepoint around them: all or none, as PostgreSQL's one statement.
  const enqueueManyTx = db.transaction((rows: readonly NewDelivery[], now: number) => {
    const out = new Array<{ id: string; created: boolean }>(rows.length)
    let run: Unkeyed[] = []
    const flush = (): void => {
      insertRows(run, now, (st, args, from, n) => {
        // All inserted, or find which ones were: the new ids present are.
        const all = st.run(...args).changes === n
        for (let i = from; i < from + n; i++) {
          const u = run[i]!
          out[u.at] = all || s.exists.get(u.id) !== undefined ? created(u.row, u.id, false, now) : repeated(u.row)
        }
      })
      run = []
    }
    rows.forEach((row, at) => {
      if (row.orderingKey == null || row.endpointId == null) run.push({ row, id: row.id ?? newId('dlv', now), at })
      else {
        flush()
        out[at] = enqueue(row, now)
      }
    })
    flush()
    return out
  })

  const insertDelivered = (row: NewDelivery, now: number): { id: string; created: boolean } => {
    const id = row.id ?? newId('dlv', now)
    const inserted = s.insertDelivered.run(
      id,
      row.channel,
      row.notificationId ?? null,
      row.recipient ?? null,
      row.eventType,
      row.payload ?? null,
      row.groupKey ?? null,
      row.maxAttempts,
      row.nextAttemptAt,
      now,
      now,
      now,
      row.appId ?? 'default',
    ).changes
    if (inserted > 0) return { id, created: true }
    return { id: idByNotification.get(row.notificationId ?? null, row.recipient ?? null, row.channel) as string, created: false }
  }

  return {
    enqueue,
    enqueueMany: (rows, now) => (rows.length === 0 ? [] : enqueueManyTx(rows, now)),
    insertDelivered,
    insertDeliveredMany: (rows, now) => rows.map((row) => insertDelivered(row, now)),
    logDelivered(ids, attempt) {
      if (ids.length > 0) s.logDelivered.run(attempt.startedAt, Math.max(0, Math.round(attempt.durationMs)), JSON.stringify(ids))
    },
    claimDue: claimer.claimDue,
    claimPull: createPullClaimer(db),
    releaseWaitingInOrder: claimer.releaseWaitingInOrder,
    settle: createSettler(db, claimer, onDue),
    get: (id) => (s.get.get(id) as Delivery | undefined) ?? null,
    attempts: (id) => s.attempts.all({ id }) as Attempt[],
    list: createDeliveryList(db),
    byEvent: (eventId) => s.byEvent.all(eventId) as Delivery[],
    byNotification: (id, limit = -1) => s.byNotification.all(id, limit) as Delivery[],
    countsByNotification: (id) => byStatus(s.countsByNotification.all(id)),
    pendingInGroup: (groupKey, now) => s.byGroup.all(groupKey, now) as Delivery[],
    holdPending: (ids, until, now) => (ids.length === 0 ? 0 : s.holdPending.run({ ids: JSON.stringify(ids), until, now }).changes),
    carryGroupMember(id, outcome, a, now) {
      const statusCode = a.statusCode ?? null
      const error = outcome.kind === 'success' ? null : (a.error ?? null)
      const at = outcome.kind === 'retry' ? outcome.at : null
      const row = s.carryGroupMember.get({ id, kind: outcome.kind, at, statusCode, error, now }) as { status: DeliveryStatus; attempts: number } | undefined
      if (!row) return null
      const logged = outcome.kind === 'retry' && row.status === 'dead' ? 'dead' : outcome.kind
      insertAttempt.run(id, row.attempts, a.startedAt, Math.max(0, Math.round(a.durationMs)), logged, statusCode, error, truncateBody(a.responseBody))
      return row.status
    },
    redeliver(id, now) {
      if (redeliverTx({ id, now }) > 0) {
        claimer.noteDue()
        onDue()
        return 'ok'
      }
      if (!s.exists.get(id)) return 'not_found'
      return s.endpointGone.get(id) ? 'endpoint_unavailable' : 'not_eligible'
    },
    recover(endpointId, since, until, now) {
      const n = s.recover.run({ endpointId, since, until, now }).changes
      if (n > 0) {
        s.waitRecovered.run({ endpointId, now })
        claimer.noteDue()
        onDue()
      }
      return n
    },
    cancelForEndpoint: (endpointId, now) =>
      s.finishPendingForEndpoint.run({ endpointId, status: 'cancelled', error: 'endpoint_deleted', now }).changes,
    killPendingForEndpoint: (endpointId, error, now) =>
      s.finishPendingForEndpoint.run({ endpointId, status: 'dead', error, now }).changes,
    deferPendingForEndpoint: (endpointId, until, now) => s.deferPendingForEndpoint.run({ endpointId, until, now }).changes,
    releaseHeldForEndpoint: (endpointId, until, now) => (until > now ? s.releaseHeldForEndpoint.run({ endpointId, until, now }).changes : 0),
    countByStatus: () => byStatus(s.countByStatus.all()),
    queueDepth: () => ({ pending: countPending.get() as number, in_flight: countInFlight.get() as number }),
    pendingByEndpoint() {
      const out: Record<string, number> = {}
      for (const r of s.pendingByEndpoint.all() as { endpointId: string; n: number }[]) out[r.endpointId] = r.n
      return out
    },
    oldestPendingAt: () => (s.oldestPending.get() as { t: number | null }).t,
  }
}
