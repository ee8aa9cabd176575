/**
 * The settle transition of the SQLite delivery queue (docs/delivery.md, "Responses and retries"):
 * successes in multi-row statements, every other outcome one statement per row, each guarded by
 * the claim token of the current claim.
 */
import type { Statement } from 'better-sqlite3'
import { keptInRow, truncateBody, type DeliveryStatus, type Outcome, type SettleInput, type SettleResult } from '../deliveries.js'
import { multiRow, prepareAll, tuples, type Db } from './db.js'
import { FINISH_IF_ENDPOINT_GONE } from './delivery-claim-sql.js'
import { type Claimer } from './delivery-claim.js'

/** One attempts row: (delivery id, attempt, started, duration, outcome, status code, error, body). */
export const INSERT_ATTEMPT = `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// `keyed` tells the claimer a row of an ordering key ended, which may have made the next row of
// its key due (trigger deliveries_next_in_order).
const SETTLE_WHERE = `WHERE id = ? AND claim_token = ? AND status = 'in_flight' RETURNING status, attempts, ordering_key IS NOT NULL AS keyed`

// Successes, the bulk of every settle, as multi-row statements for the rows and their attempts
// (db.ts multiRow): per-row statements measured ~8 µs per delivery, JSON arrays through
// json_each ~5 µs, bound VALUES less again (bench/queue-floor.ts). Parameters: completed_at,
// updated_at, then (id, claim token, status code, started, duration, body) per row. A success's
// own status code, or none (inbox, email): never an earlier failure's (a 451 of a mail server
// that then accepted). The last three are the attempt kept in the row (keptInRow); NULL when it
// is logged as an attempts row, or when there is none.
/** The success settle for n rows, without RETURNING: for rows whose claim the caller describes (SettleInput.claimed). */
const SETTLE_SUCCESS_ROWS_BLIND = (n: number): string => `UPDATE deliveries SET status = 'success', claim_token = NULL, lease_until = NULL,
      last_status_code = j.column3, last_error = NULL, completed_at = ?, updated_at = ?,
      success_started_at = j.column4, success_duration_ms = j.column5, success_body = j.column6
    FROM (VALUES ${tuples(n, '(?, ?, ?, ?, ?, ?)')}) AS j
    WHERE deliveries.id = j.column1 AND deliveries.claim_token = j.column2 AND deliveries.status = 'in_flight'`
/** The success settle for n rows, returning each matched row's id, attempts and whether it has an ordering key. */
const SETTLE_SUCCESS_ROWS = (n: number): string => `${SETTLE_SUCCESS_ROWS_BLIND(n)}
    RETURNING deliveries.id, deliveries.attempts, deliveries.ordering_key IS NOT NULL`
/** The success attempts of n rows: (id, attempt, startedAt, durationMs, statusCode, error, body) each. */
const SUCCESS_ATTEMPT_ROWS = (n: number): string => `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    VALUES ${tuples(n, "(?, ?, ?, ?, 'success', ?, ?, ?)")}`

const SQL = {
  // One statement per outcome (docs/delivery.md, "Responses and retries"); each needs the claim token of the current claim.
  // Positional parameters: named binding measured ~3 µs slower per call, and settle runs once
  // per delivery. The argument order of each is built in `settleArgs`.
  settleRetry: `UPDATE deliveries SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
      next_attempt_at = ?, claim_token = NULL, lease_until = NULL,
      last_status_code = COALESCE(?, last_status_code), last_error = ?,
      completed_at = CASE WHEN attempts >= max_attempts THEN ? ELSE NULL END, updated_at = ?
    ${SETTLE_WHERE}`,
  settleDead: `UPDATE deliveries SET status = 'dead', claim_token = NULL, lease_until = NULL,
      last_status_code = COALESCE(?, last_status_code), last_error = ?, completed_at = ?, updated_at = ?
    ${SETTLE_WHERE}`,
  // Snooze and release give the attempt back: the endpoint was down, or nothing was sent.
  settleRefund: `UPDATE deliveries SET status = 'pending', attempts = max(attempts - 1, 0), next_attempt_at = ?,
      claim_token = NULL, lease_until = NULL, last_status_code = COALESCE(?, last_status_code), updated_at = ?
    ${SETTLE_WHERE}`,
  // A row that fails while its endpoint is deleted or disabled must not wait as pending for an
  // endpoint that is never claimed again: it ends at once, as the claim would end it.
  finishIfEndpointGone: FINISH_IF_ENDPOINT_GONE,
  insertAttempt: INSERT_ATTEMPT,
}

/** The positional arguments of the settle statement for `r.outcome.kind` (not success), in SQL order. */
function settleArgs(r: SettleInput, at: number | null, now: number): unknown[] {
  const statusCode = r.attempt?.statusCode ?? null
  const error = r.attempt?.error ?? null
  switch (r.outcome.kind) {
    case 'retry':
      return [at, statusCode, error, now, now, r.id, r.claimToken]
    case 'dead':
      return [statusCode, error, now, now, r.id, r.claimToken]
    default:
      return [at, statusCode, now, r.id, r.claimToken]
  }
}

/**
 * The settle of a batch over a connection: one IMMEDIATE transaction per call, rows whose claim
 * token no longer matches come back `missed`. Tells the claimer (and `onDue`) when a row became due.
 */
export function createSettler(db: Db, claimer: Pick<Claimer, 'noteDue'>, onDue: () => void): (results: readonly SettleInput[], now: number) => SettleResult[] {
  const s = prepareAll(db, SQL)
  // raw(): each returns [status, attempts] as an array rather than an object.
  const refund = s.settleRefund.raw()
  const finishIfEndpointGone = s.finishIfEndpointGone.pluck()
  const settleBy: Record<Exclude<Outcome['kind'], 'success'>, Statement> = {
    retry: s.settleRetry.raw(),
    dead: s.settleDead.raw(),
    snooze: refund,
    release: refund,
  }
  /** A success to settle: its input, with the attempt count its row has once settled. */
  type Success = { r: SettleInput; attempts: number }
  const successArgs = (rows: readonly Success[], from: number, n: number, now: number): unknown[] => {
    const args: unknown[] = [now, now]
    for (let i = from; i < from + n; i++) {
      const r = rows[i]!.r
      const a = r.attempt
      if (a && keptInRow(a) && r.logAs === undefined) args.push(r.id, r.claimToken, a.statusCode ?? null, a.startedAt, Math.max(0, Math.round(a.durationMs)), a.responseBody ?? null)
      else args.push(r.id, r.claimToken, a?.statusCode ?? null, null, null, null)
    }
    return args
  }
  const settleSuccessRows = multiRow(db, SETTLE_SUCCESS_ROWS, successArgs, (st) => st.raw())
  const settleSuccessRowsBlind = multiRow(db, SETTLE_SUCCESS_ROWS_BLIND, successArgs)
  // Under a savepoint: a chunk in which some row missed is undone, then settled again with
  // RETURNING to learn which ones matched (misses are rare: a lease that ran out, a redeliver).
  const MISSED = new Error('a row of the chunk missed')
  const settleChunkBlind = db.transaction((st: Statement, args: unknown[], n: number): void => {
    if (st.run(...args).changes !== n) throw MISSED
  })
  const successAttemptRows = multiRow(db, SUCCESS_ATTEMPT_ROWS, (rows: readonly Success[], from, n) => {
    const args: unknown[] = []
    for (let i = from; i < from + n; i++) {
      const { r, attempts } = rows[i]!
      const a = r.attempt!
      args.push(r.id, attempts, a.startedAt, Math.max(0, Math.round(a.durationMs)), a.statusCode ?? null, a.error ?? null, truncateBody(a.responseBody))
    }
    return args
  })

  /**
   * Settles the successes of a batch (one statement per 64 rows, their attempts kept in the rows
   * or, the few that are not, in attempts rows); returns id → attempts of the rows that matched.
   */
  const settleSuccesses = (results: readonly SettleInput[], now: number, keyed: { ended: boolean }): Map<string, number> => {
    const rows: Success[] = []
    for (const r of results) if (r.outcome.kind === 'success') rows.push({ r, attempts: 0 })
    const settled = new Map<string, number>()
    if (rows.length === 0) return settled
    const readBack = (st: Statement, args: unknown[]): void => {
      for (const [id, attempts, isKeyed] of st.all(...args) as [string, number, number][]) {
        settled.set(id, attempts)
        if (isKeyed) keyed.ended = true
      }
    }
    // With every row's claim described, a chunk whose rows all matched needs nothing read back
    // (RETURNING measured ~0.8 µs per row, bench/queue-floor.ts).
    if (rows.every((row) => row.r.claimed !== undefined)) {
      settleSuccessRowsBlind(rows, now, (st, args, from, n) => {
        try {
          settleChunkBlind(st, args, n)
        } catch (err) {
          if (err !== MISSED) throw err
          settleSuccessRows(rows.slice(from, from + n), now, readBack)
          return
        }
        for (let i = from; i < from + n; i++) {
          const r = rows[i]!.r
          settled.set(r.id, r.claimed!.attempts)
          if (r.claimed!.keyed) keyed.ended = true
        }
      })
    } else settleSuccessRows(rows, now, readBack)
    const logged: Success[] = []
    for (const row of rows) {
      const a = row.r.attempt
      const n = a && (!keptInRow(a) || row.r.logAs !== undefined) ? settled.get(row.r.id) : undefined
      if (n === undefined) continue
      row.attempts = n
      // A success logged under another name (a pull endpoint's `acked`) is its own attempts row.
      if (row.r.logAs !== undefined) s.insertAttempt.run(row.r.id, n, a!.startedAt, Math.max(0, Math.round(a!.durationMs)), row.r.logAs, a!.statusCode ?? null, a!.error ?? null, truncateBody(a!.responseBody))
      else logged.push(row)
    }
    successAttemptRows(logged, undefined, (st, args) => st.run(...args))
    return settled
  }

  const settleTx = db.transaction((results: readonly SettleInput[], now: number): SettleResult[] => {
    let due = false
    const keyed = { ended: false }
    const successes = settleSuccesses(results, now, keyed)
    const out = results.map((r): SettleResult => {
      const o = r.outcome
      if (o.kind === 'success') {
        const attempts = successes.get(r.id)
        return attempts === undefined ? { result: 'missed' } : { result: 'settled', status: 'success', attempts }
      }
      const at = o.kind === 'retry' || o.kind === 'snooze' ? o.at : o.kind === 'release' ? now : null
      const raw = settleBy[o.kind].get(...settleArgs(r, at, now)) as [DeliveryStatus, number, number] | undefined
      if (!raw) return { result: 'missed' }
      const row = { status: raw[0], attempts: raw[1] }
      if (raw[2] && row.status !== 'pending') keyed.ended = true
      if (row.status === 'pending') row.status = (finishIfEndpointGone.get(now, now, JSON.stringify([r.id])) as DeliveryStatus | undefined) ?? 'pending'
      if (row.status === 'pending' && at !== null && at <= now) due = true
      const a = r.attempt
      if (a) {
        s.insertAttempt.run(
          r.id,
          o.kind === 'snooze' || o.kind === 'release' ? row.attempts + 1 : row.attempts,
          a.startedAt,
          Math.max(0, Math.round(a.durationMs)),
          o.kind === 'retry' && row.status === 'dead' ? 'dead' : (r.logAs ?? o.kind),
          a.statusCode ?? null,
          a.error ?? null,
          truncateBody(a.responseBody),
        )
      }
      return { result: 'settled', status: row.status, attempts: row.attempts }
    })
    if (due || keyed.ended) claimer.noteDue()
    if (due) onDue()
    return out
  })

  return (results, now) => (results.length === 0 ? [] : settleTx.immediate(results, now))
}
