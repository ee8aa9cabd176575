/**
 * The settle transition of the PostgreSQL delivery queue (docs/delivery.md, "Responses and
 * retries"), inside the caller's transaction.
 */
import { PG_DELIVERY_SQL as SQL, type SettleRow } from './deliveries-sql.js'
import { type PgQueryable } from './queryable.js'
import { keptInRow, truncateBody, type DeliveryStatus, type SettleInput, type SettleResult } from '../deliveries.js'

/** Settles the successes of a batch in one statement, two when some attempt is not kept in its row; returns id → attempts of the rows that matched. */
const settleSuccesses = async (c: PgQueryable, results: readonly SettleInput[], now: number, keyed: { ended: boolean }): Promise<Map<string, number>> => {
  const succ = results.filter((r) => r.outcome.kind === 'success')
  const settled = new Map<string, number>()
  if (succ.length === 0) return settled
  const inRow = succ.map((r) => (r.attempt && keptInRow(r.attempt) && r.logAs === undefined ? r.attempt : null))
  const { rows } = await c.query<{ id: string; attempts: number; keyed: boolean }>(SQL.settleSuccessMany, [
    now,
    succ.map((r) => r.id),
    succ.map((r) => r.claimToken),
    succ.map((r) => r.attempt?.statusCode ?? null),
    inRow.map((a) => a?.startedAt ?? null),
    inRow.map((a) => (a ? Math.max(0, Math.round(a.durationMs)) : null)),
    inRow.map((a) => a?.responseBody ?? null),
  ])
  for (const r of rows) {
    settled.set(r.id, r.attempts)
    if (r.keyed) keyed.ended = true
  }
  const logged = succ.filter((r, i) => r.attempt && inRow[i] === null && settled.has(r.id) && r.logAs === undefined)
  // A success logged under another name (a pull endpoint's `acked`) is its own attempts row.
  for (const r of succ) {
    const a = r.attempt
    if (!a || r.logAs === undefined || !settled.has(r.id)) continue
    await c.query(SQL.insertAttempt, [r.id, settled.get(r.id)!, a.startedAt, Math.max(0, Math.round(a.durationMs)), r.logAs, a.statusCode ?? null, a.error ?? null, truncateBody(a.responseBody)])
  }
  if (logged.length > 0) {
    const a = logged.map((r) => r.attempt!)
    await c.query(SQL.insertSuccessAttempts, [
      logged.map((r) => r.id),
      logged.map((r) => settled.get(r.id)!),
      a.map((x) => x.startedAt),
      a.map((x) => Math.max(0, Math.round(x.durationMs))),
      a.map((x) => x.statusCode ?? null),
      a.map((x) => x.error ?? null),
      a.map((x) => truncateBody(x.responseBody)),
    ])
  }
  return settled
}

/**
 * Settles a batch on `c` (inside the caller's transaction): successes in one or two statements,
 * every other outcome one statement per row guarded by its claim token; `markDue` when a row became due now.
 */
export const settleAll = async (c: PgQueryable, results: readonly SettleInput[], now: number, markDue: () => void): Promise<SettleResult[]> => {
  let due = false
  const keyed = { ended: false }
  const successes = await settleSuccesses(c, results, now, keyed)
  const out: SettleResult[] = []
  for (const r of results) {
    const o = r.outcome
    if (o.kind === 'success') {
      const attempts = successes.get(r.id)
      out.push(attempts === undefined ? { result: 'missed' } : { result: 'settled', status: 'success', attempts })
      continue
    }
    const at = o.kind === 'retry' || o.kind === 'snooze' ? o.at : o.kind === 'release' ? now : null
    const statusCode = r.attempt?.statusCode ?? null
    const error = r.attempt?.error ?? null
    const args =
      o.kind === 'retry'
        ? [r.id, r.claimToken, at, statusCode, error, now]
        : o.kind === 'dead'
          ? [r.id, r.claimToken, statusCode, error, now]
          : [r.id, r.claimToken, at, statusCode, now]
    const sql = o.kind === 'retry' ? SQL.settleRetry : o.kind === 'dead' ? SQL.settleDead : SQL.settleRefund
    const raw = (await c.query<SettleRow>(sql, args)).rows[0]
    if (!raw) {
      out.push({ result: 'missed' })
      continue
    }
    const row = { status: raw.status, attempts: raw.attempts }
    if (raw.keyed && row.status !== 'pending') keyed.ended = true
    if (row.status === 'pending') {
      const gone = (await c.query<{ status: DeliveryStatus }>(SQL.finishIfEndpointGone, [now, now, [r.id]])).rows[0]
      row.status = gone?.status ?? 'pending'
    }
    if (row.status === 'pending' && at !== null && at <= now) due = true
    const a = r.attempt
    if (a) {
      await c.query(SQL.insertAttempt, [
        r.id,
        o.kind === 'snooze' || o.kind === 'release' ? row.attempts + 1 : row.attempts,
        a.startedAt,
        Math.max(0, Math.round(a.durationMs)),
        o.kind === 'retry' && row.status === 'dead' ? 'dead' : (r.logAs ?? o.kind),
        a.statusCode ?? null,
        a.error ?? null,
        truncateBody(a.responseBody),
      ])
    }
    out.push({ result: 'settled', status: row.status, attempts: row.attempts })
  }
  // As SQLite: a row the trigger made due is claimed by the settling dispatcher itself.
  if (due) markDue()
  return out
}
