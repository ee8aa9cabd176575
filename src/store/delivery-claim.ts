/**
 * The claim side of the delivery queue (DESIGN.md "The claim protocol"): expire dead leases,
 * pick due rows, move exhausted ones to dead, and claim the rest with a fresh token and lease.
 * Used by createDeliveriesStore; import the types and functions from './deliveries.js'.
 */
import { prepareAll, type Db } from './db.js'
import type { Channel, ClaimedDelivery, ClaimOptions, DeliveriesStore } from './delivery-types.js'

/** The lease margin: a request is never re-claimed while in flight (SPEC §1, >= 15 s). */
export const LEASE_MARGIN_MS = 30_000

// What a claim returns, as raw arrays mapped by `toClaimed`: building 22-property objects in
// better-sqlite3 measured ~6 µs per row, more than half of the claim; arrays cost ~3 µs.
// status, updated_at and completed_at are known after a claim and are filled in by `toClaimed`.
const CLAIM_COLUMNS = `id, channel, event_id, endpoint_id, notification_id, recipient, event_type,
  ordering_key, payload, group_key, attempts, max_attempts, next_attempt_at, claim_token, lease_until,
  last_status_code, last_error, created_at, (SELECT body FROM events WHERE id = deliveries.event_id)`

/** Maps one raw CLAIM_COLUMNS row of a claim made at `now`. */
function toClaimed(r: unknown[], now: number): ClaimedDelivery {
  return {
    id: r[0] as string,
    channel: r[1] as Channel,
    eventId: r[2] as string | null,
    endpointId: r[3] as string | null,
    notificationId: r[4] as string | null,
    recipient: r[5] as string | null,
    eventType: r[6] as string,
    orderingKey: r[7] as string | null,
    payload: r[8] as string | null,
    groupKey: r[9] as string | null,
    status: 'in_flight',
    attempts: r[10] as number,
    maxAttempts: r[11] as number,
    nextAttemptAt: r[12] as number,
    claimToken: r[13] as string,
    leaseUntil: r[14] as number,
    lastStatusCode: r[15] as number | null,
    lastError: r[16] as string | null,
    createdAt: r[17] as number,
    updatedAt: now,
    completedAt: null,
    eventBody: r[18] as string | null,
  }
}

// Due rows in (next_attempt_at, id) order, from the partial index deliveries_due, resuming after
// the last row seen (keyset paging). Paused endpoints are skipped here so an outage does not burn
// attempts. Rows of deleted or disabled endpoints come back flagged `gone` and are finished
// (FINISH_IF_ENDPOINT_GONE) rather than claimed: such a row can only be pending through a race with the
// delete or disable, and nothing would ever claim it. The ordering barrier hides a row while an
// older pending row, or any in-flight one (a redelivered or recovered older row can be pending
// behind a newer one in flight), has the same endpoint + ordering key on an ordered endpoint.
const CANDIDATES = (exclude: boolean): string => `SELECT d.rowid AS rowid, d.id, d.endpoint_id AS endpointId,
      d.attempts >= d.max_attempts AS exhausted, d.next_attempt_at AS nextAttemptAt,
      (e.deleted_at IS NOT NULL OR e.disabled = 1) AS gone
    FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
    WHERE d.status = 'pending' AND d.next_attempt_at <= @now
      AND (d.next_attempt_at, d.id) > (@afterAt, @afterId)
      AND (d.endpoint_id IS NULL OR e.disabled = 1 OR e.deleted_at IS NOT NULL
           OR ((e.paused_until IS NULL OR e.paused_until <= @now)
           ${exclude ? 'AND d.endpoint_id NOT IN (SELECT value FROM json_each(@exclude))' : ''}))
      AND (d.ordering_key IS NULL OR e.ordered IS NOT 1 OR NOT EXISTS (
           SELECT 1 FROM deliveries o
            WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key
              AND ((o.status = 'pending' AND o.id < d.id) OR (o.status = 'in_flight' AND o.id <> d.id))))
    ORDER BY d.next_attempt_at, d.id
    LIMIT @page`

// A lease that ran out means the worker died: the attempt stays spent (the request may have
// gone out), so a row with no attempts left is dead rather than pending.
const EXPIRE_CLAIM = `UPDATE deliveries
      SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'lease_expired' ELSE last_error END,
          completed_at = CASE WHEN attempts >= max_attempts THEN @now ELSE NULL END,
          claim_token = NULL, lease_until = NULL, next_attempt_at = @now, updated_at = @now`

/**
 * Ends pending rows (a JSON array of ids) whose endpoint is deleted or disabled, as deleting
 * (SPEC §2: cancelled) and disabling (SPEC §5: dead) do; such a row would never be claimed.
 * Parameters: completed_at, updated_at, ids. Returns the status of each row it ended.
 */
export const FINISH_IF_ENDPOINT_GONE = `UPDATE deliveries
      SET status = CASE WHEN e.deleted_at IS NOT NULL THEN 'cancelled' ELSE 'dead' END,
          last_error = CASE WHEN e.deleted_at IS NOT NULL THEN 'endpoint_deleted' ELSE 'endpoint_disabled' END,
          claim_token = NULL, completed_at = ?, updated_at = ?
    FROM endpoints e
    WHERE deliveries.id IN (SELECT value FROM json_each(?)) AND deliveries.status = 'pending'
      AND e.id = deliveries.endpoint_id AND (e.deleted_at IS NOT NULL OR e.disabled = 1)
    RETURNING deliveries.status`

const SQL = {
  // A read, so an idle dispatcher's poll does not take the write lock (another process writing
  // the same file would wait behind it). Due rows of a paused endpoint still count as work.
  hasWork: `SELECT EXISTS (SELECT 1 FROM deliveries WHERE status = 'pending' AND next_attempt_at <= @now)
      OR EXISTS (SELECT 1 FROM deliveries WHERE status = 'in_flight' AND lease_until <= @now)`,
  expireLeases: `${EXPIRE_CLAIM} WHERE status = 'in_flight' AND lease_until <= @now`,
  releaseOrphans: `${EXPIRE_CLAIM} WHERE status = 'in_flight'`,
  candidates: CANDIDATES(false),
  candidatesExcluding: CANDIDATES(true),
  markExhausted: `UPDATE deliveries SET status = 'dead', last_error = COALESCE(last_error, 'attempts_exhausted'),
      claim_token = NULL, completed_at = @now, updated_at = @now
    WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending'`,
  finishGone: FINISH_IF_ENDPOINT_GONE,
  // By rowid: the candidates carry it (read in the same transaction, so it cannot have moved),
  // which saves one id-index lookup per row.
  claim: `UPDATE deliveries
      SET status = 'in_flight', claim_token = lower(hex(randomblob(12))), attempts = attempts + 1, updated_at = @now,
          lease_until = @now + @margin + COALESCE((SELECT timeout_ms FROM endpoints WHERE id = deliveries.endpoint_id), @defaultTimeout)
    WHERE rowid IN (SELECT value FROM json_each(@rowids)) AND status = 'pending'
    RETURNING ${CLAIM_COLUMNS}`,
} as const

/** The candidates' order: next_attempt_at, then id (ASCII, so JS and SQLite compare alike). */
const byDueThenId = (a: ClaimedDelivery, b: ClaimedDelivery): number =>
  a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

type Candidate = { rowid: number; id: string; endpointId: string | null; exhausted: number; nextAttemptAt: number; gone: number }

/** What one candidate scan found: rows to claim, and rows to finish instead. */
interface Picked {
  chosen: number[]
  exhausted: string[]
  /** Rows of a deleted or disabled endpoint. */
  gone: string[]
}

/** The claim functions of the delivery store over `db`; `onDue` as in createDeliveriesStore. */
export function createClaimer(db: Db, onDue: () => void): Pick<DeliveriesStore, 'claimDue' | 'releaseOrphanedClaims'> {
  const s = prepareAll(db, SQL)
  const claimRaw = s.claim.raw()
  const hasWork = s.hasWork.pluck()

  /**
   * Picks up to `limit` claimable ids. Pages through due rows with a keyset instead of one
   * over-sized scan, so a backlog on one saturated endpoint cannot hide other endpoints' rows
   * (SPEC §1 isolation): once an endpoint's capacity is used up it is excluded in SQL for the
   * following pages. Bounded at 16 × limit rows (min 1,024) per claim.
   */
  const pickCandidates = (opts: ClaimOptions): Picked => {
    const { now, limit, capacity } = opts
    const exclude = new Set(opts.excludeEndpoints ?? [])
    const exhausted: string[] = []
    const gone: string[] = []
    const chosen: number[] = []
    const taken = new Map<string, number>()
    const page = Math.max(limit + 8, 16)
    const maxScan = Math.max(limit * 16, 1024)
    let afterAt = Number.MIN_SAFE_INTEGER
    let afterId = ''
    for (let scanned = 0; scanned < maxScan; ) {
      const params = { now, afterAt, afterId, page, exclude: '' }
      let rows: Candidate[]
      if (exclude.size > 0) {
        params.exclude = JSON.stringify([...exclude])
        rows = s.candidatesExcluding.all(params) as Candidate[]
      } else {
        rows = s.candidates.all(params) as Candidate[]
      }
      for (const r of rows) {
        afterAt = r.nextAttemptAt
        afterId = r.id
        if (r.gone) {
          gone.push(r.id)
          continue
        }
        if (r.exhausted) {
          exhausted.push(r.id)
          continue
        }
        if (chosen.length >= limit) break
        if (r.endpointId !== null) {
          if (exclude.has(r.endpointId)) continue
          if (capacity) {
            const used = taken.get(r.endpointId) ?? 0
            if (used >= capacity(r.endpointId)) {
              exclude.add(r.endpointId)
              continue
            }
            taken.set(r.endpointId, used + 1)
          }
        }
        chosen.push(r.rowid)
      }
      scanned += rows.length
      if (rows.length < page || chosen.length >= limit) break
    }
    return { chosen, exhausted, gone }
  }

  const claimTx = db.transaction((opts: ClaimOptions): ClaimedDelivery[] => {
    const { now, limit } = opts
    s.expireLeases.run({ now })
    if (limit <= 0) return []
    const { chosen, exhausted, gone } = pickCandidates(opts)
    if (exhausted.length > 0) s.markExhausted.run({ ids: JSON.stringify(exhausted), now })
    if (gone.length > 0) s.finishGone.run(now, now, JSON.stringify(gone))
    if (chosen.length === 0) return []
    const rows = claimRaw.all({
      rowids: JSON.stringify(chosen),
      now,
      margin: Math.max(opts.leaseMarginMs ?? LEASE_MARGIN_MS, 15_000),
      defaultTimeout: opts.defaultTimeoutMs,
    }) as unknown[][]
    // RETURNING order is unspecified; keep the candidates' order (due time, then id).
    return rows.map((r) => toClaimed(r, now)).sort(byDueThenId)
  })

  return {
    // Inside a transaction the lock is already held, and the caller usually just freed slots.
    claimDue: (opts) => (db.inTransaction || hasWork.get({ now: opts.now }) === 1 ? claimTx.immediate(opts) : []),
    releaseOrphanedClaims(now) {
      const n = s.releaseOrphans.run({ now }).changes
      if (n > 0) onDue()
      return n
    },
  }
}
