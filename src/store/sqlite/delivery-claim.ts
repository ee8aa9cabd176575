/**
 * The claim side of the delivery queue (DESIGN.md "The claim protocol"): expire dead leases,
 * pick due rows, move exhausted ones to dead, and claim the rest with a fresh token and lease.
 * Used by createDeliveriesStore; import the types and functions from './deliveries.js'.
 */
import { multiRow, prepareAll, type Db } from './db.js'
import { dueKey, leaseMarginOf, newClaimToken, PASS_ENDPOINTS, type Channel, type ClaimedDelivery, type ClaimOptions, type DeliveriesStore } from '../deliveries.js'
import { CLAIM_ROWS, CLAIM_SQL, STATE, TURN_PAGE } from './delivery-claim-sql.js'



/** The candidates' order: next_attempt_at, then id (ASCII, so JS and SQLite compare alike). */
const byDueThenId = (a: ClaimedDelivery, b: ClaimedDelivery): number =>
  a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Candidates grouped by the lease they read (one group unless their timeouts differ). */
function byLease(chosen: readonly Candidate[]): Map<number, Candidate[]> {
  const groups = new Map<number, Candidate[]>()
  for (const c of chosen) {
    const g = groups.get(c[10])
    if (g) g.push(c)
    else groups.set(c[10], [c])
  }
  return groups
}

/** A raw row of `window` or `ofKey` (candidateColumns; arrays are cheaper to build than objects). */
type Candidate = [
  rowid: number, id: string, nextAttemptAt: number, state: number,
  channel: Channel, eventId: string | null, endpointId: string | null, eventType: string, attempts: number, maxAttempts: number,
  leaseUntil: number, createdAt: number, eventBody: string | null, appId: string, payload: string | null, targetKey: string | null,
  rare: string | null,
]

/** RARE_COLUMNS of a candidate, parsed. */
type Rare = [notificationId: string | null, recipient: string | null, orderingKey: string | null, groupKey: string | null, lastStatusCode: number | null, lastError: string | null]
const NO_RARE: Rare = [null, null, null, null, null, null]

/** DUE_KEY of a candidate. */
const keyOf = (c: Candidate): string => dueKey({ endpointId: c[6], targetKey: c[15], channel: c[4] })

/** The delivery a candidate becomes once a claim at `now` with `claimToken` took it. */
function toClaimed(c: Candidate, claimToken: string, now: number): ClaimedDelivery {
  const rare = c[16] === null ? NO_RARE : (JSON.parse(c[16]) as Rare)
  return {
    id: c[1],
    channel: c[4],
    eventId: c[5],
    endpointId: c[6],
    notificationId: rare[0],
    recipient: rare[1],
    eventType: c[7],
    orderingKey: rare[2],
    payload: c[14],
    groupKey: rare[3],
    status: 'in_flight',
    attempts: c[8] + 1,
    maxAttempts: c[9],
    nextAttemptAt: c[2],
    claimToken,
    leaseUntil: c[10],
    lastStatusCode: rare[4],
    lastError: rare[5],
    createdAt: c[11],
    updatedAt: now,
    completedAt: null,
    eventBody: c[12],
    appId: c[13],
    targetKey: c[15],
  }
}

/** The named parameters of LEASE_UNTIL. */
type LeaseParams = { now: number; margin: number; defaultTimeout: number; channelTimeouts: string }

/** What one candidate scan found: rows to claim, and rows to finish instead. */
interface Picked {
  chosen: Candidate[]
  exhausted: string[]
  /** Rows of a deleted or disabled endpoint. */
  gone: string[]
}

/**
 * How long (by the claims' `now`) a second path that found nothing to take is not repeated,
 * unless a row became due meanwhile or an endpoint it found full has a free slot again.
 */
export const QUIET_MS = 100

/** The claim functions of the delivery store over `db`, and `noteDue` for the writes that make rows due. */
export interface Claimer extends Pick<DeliveriesStore, 'claimDue' | 'releaseWaitingInOrder'> {
  /** Tells the claimer a row of `key` (an endpoint or `#<channel>`, see DUE_KEY; undefined: of any) became due. */
  noteDue(key?: string): void
}

/** The claim functions of the delivery store over `db`; `onDue` as in createDeliveriesStore. */
export function createClaimer(db: Db, onDue: () => void): Claimer {
  const s = prepareAll(db, CLAIM_SQL)
  const claimRows = multiRow(db, CLAIM_ROWS, (rows: readonly Candidate[], from, n) => rows.slice(from, from + n).map((c) => c[0]))
  const hasWork = s.hasWork.pluck()
  const dueEndpoints = s.dueEndpoints.raw()
  const dueWindow = s.window.raw()
  const ofKey = s.ofKey.raw()
  // Where the per-endpoint path stopped last time, so successive claims take turns (round robin).
  let lastServed = ''
  // Why a second path may be skipped: while the head of the queue belongs to one saturated
  // endpoint, every claim hands over, and looking up the endpoints with due rows costs ~2.5 µs per
  // endpoint with pending rows (up to PASS_ENDPOINTS per claim). After passes that found nothing, the
  // next ones are skipped for QUIET_MS unless something changed: a row became due (counted by
  // `generation`, except rows of the endpoint that stopped the first path: they queue behind its
  // own backlog, which that path takes), or an endpoint the pass found full has a free slot again.
  let generation = 0
  let stoppedBy: string | null = null
  // The stopping endpoint whose new due rows went uncounted: once another endpoint (or none)
  // stops the first path, they no longer queue behind a backlog that path reads, so they count.
  let uncounted: string | null = null
  let quiet: { at: number; generation: number; full: string[] } | null = null
  // Passes stop after PASS_ENDPOINTS endpoints, so with more endpoints "found nothing" is a run
  // of passes, each going on where the previous stopped: once it has been round the ring from
  // `origin` with no row made due meanwhile, the claimer goes quiet as after one whole pass.
  let streak: { origin: string; crossed: boolean; generation: number; full: string[] } | null = null

  /**
   * Picks up to `limit` claimable rows. The first path reads the due queue in order (oldest
   * first) while every row it meets can be taken. At the first row whose endpoint has no free
   * slot (saturated, rate-limited, half-open), or after `4 × limit` rows (min 256) hidden by a
   * pause or an ordering barrier, it hands over to the second path: the endpoints with due rows,
   * in turns that continue from the previous claim, each giving its own due rows from the
   * per-endpoint index. So a backlog on one endpoint is never read past, and never delays the
   * others (docs/delivery.md isolation).
   */
  const pickCandidates = (opts: ClaimOptions, lease: LeaseParams): Picked => {
    const { now, limit, capacity } = opts
    const exclude = new Set(opts.excludeEndpoints ?? [])
    const picked: Picked = { chosen: [], exhausted: [], gone: [] }
    // Rows this claim picked per key (endpoint, or `#<channel>`).
    const taken = new Map<string, number>()
    // Free slots of a key after this claim's picks so far.
    const room = (key: string): number => {
      if (exclude.has(key)) return 0
      const free = capacity ? capacity(key) - (taken.get(key) ?? 0) : Infinity
      if (free <= 0) exclude.add(key)
      return free
    }
    // Takes the row if it can; false when it has to leave it (limit reached, or no room left on
    // its endpoint). Rows to finish are collected; blocked rows are passed over.
    const take = (c: Candidate): boolean => {
      const state = c[3]
      if (state === STATE.gone) picked.gone.push(c[1])
      else if (state === STATE.blocked) return true
      else if (state === STATE.exhausted) picked.exhausted.push(c[1])
      else {
        const key = keyOf(c)
        if (picked.chosen.length >= limit || room(key) <= 0) return false
        picked.chosen.push(c)
        taken.set(key, (taken.get(key) ?? 0) + 1)
      }
      return true
    }

    // The position after the last row the first path took or passed, and the endpoint whose row
    // stopped it (its new rows come after its own backlog, so this path reaches them itself).
    const at = { ...lease, afterAt: Number.MIN_SAFE_INTEGER, afterId: '' }
    let stopper: string | null = null
    const budget = Math.max(limit * 4, 256)
    let read = 0
    let handOver = false
    for (const r of dueWindow.iterate(lease) as IterableIterator<Candidate>) {
      if (!take(r)) {
        stopper = keyOf(r)
        handOver = true
        break
      }
      at.afterAt = r[2]
      at.afterId = r[1]
      if (picked.chosen.length >= limit) return picked
      if (++read >= budget) break
    }
    if (!handOver && read < budget) return picked
    if (uncounted !== null && uncounted !== stopper) {
      generation++
      uncounted = null
    }
    stoppedBy = stopper
    if (quiet !== null && quiet.generation === generation && now >= quiet.at && now - quiet.at < QUIET_MS && quiet.full.every((id) => room(id) <= 0)) {
      return picked
    }
    const before = picked.chosen.length
    const start = lastServed
    const run = streak !== null && streak.generation === generation ? streak : { origin: start, crossed: false, generation, full: [] }
    const { full } = run
    // `complete`: every endpoint has had its turn since `run.origin`. Having taken nothing by
    // then makes the next passes wait (QUIET_MS); a pass cut short by PASS_ENDPOINTS carries the run on.
    const secondPath = (complete: boolean): Picked => {
      const took = picked.chosen.length > before
      quiet = took || !complete ? null : { at: now, generation, full }
      streak = took || complete ? null : run
      return picked
    }

    // The second path: rows after the last one the first path took or passed, key by key (the
    // rows without an endpoint take their turns as `#<channel>`, before the first endpoint).
    const served = new Set<string>()
    const serve = (key: string): boolean => {
      if (served.has(key)) return false
      served.add(key)
      let want = Math.min(limit - picked.chosen.length, room(key))
      if (want <= 0 && key !== stopper) full.push(key)
      if (want > 0) {
        for (const r of ofKey.iterate({ ...at, key }) as IterableIterator<Candidate>) if (!take(r) || --want === 0) break
      }
      if (picked.chosen.length < limit) return false
      lastServed = key
      return true
    }
    let looked = 0
    for (let after = start; ; ) {
      const rows = dueEndpoints.all({ now, after }) as [string, number][]
      for (const [id, due] of rows) {
        // Past the run's origin again: every endpoint has had its turn.
        if (run.crossed && id > run.origin) return secondPath(true)
        if (due && serve(id)) return secondPath(true)
        if (++looked >= PASS_ENDPOINTS) {
          lastServed = id
          opts.onCutShort?.()
          return secondPath(false)
        }
      }
      if (rows.length === TURN_PAGE) after = rows[rows.length - 1]![0]
      else if (run.crossed) return secondPath(true)
      else {
        run.crossed = true
        after = ''
      }
    }
  }

  const claimTx = db.transaction((opts: ClaimOptions): ClaimedDelivery[] => {
    const { now, limit } = opts
    s.logPullExpired.run({ now })
    s.expireLeases.run({ now })
    if (limit <= 0) return []
    const lease: LeaseParams = { now, margin: leaseMarginOf(opts), defaultTimeout: opts.defaultTimeoutMs, channelTimeouts: JSON.stringify(opts.channelTimeoutsMs ?? {}) }
    const { chosen, exhausted, gone } = pickCandidates(opts, lease)
    if (exhausted.length > 0) s.markExhausted.run({ ids: JSON.stringify(exhausted), now })
    if (gone.length > 0) s.finishGone.run(now, now, JSON.stringify(gone))
    // Ending rows may make the next row of their ordering key due (deliveries_next_in_order).
    if (exhausted.length > 0 || gone.length > 0) generation++
    if (chosen.length === 0) return []
    const token = newClaimToken(opts)
    let changed = 0
    for (const [leaseUntil, rows] of byLease(chosen)) {
      const named = { now, token, lease: leaseUntil }
      claimRows(rows, undefined, (st, args) => (changed += st.run(...args, named).changes))
    }
    // Read in this transaction as pending, so every candidate is taken; were one not, the
    // candidates would not be the rows: roll the claim back.
    if (changed !== chosen.length) throw new Error(`claim took ${changed} of ${chosen.length} rows`)
    // The second path gives rows key by key; keep the candidates' order (due time, then id).
    return chosen.map((c) => toClaimed(c, token, now)).sort(byDueThenId)
  })

  /** Reports `n` rows made due by a repair; returns `n`. */
  const madeDue = (n: number): number => {
    if (n > 0) {
      generation++
      onDue()
    }
    return n
  }

  return {
    // Inside a transaction the lock is already held, and the caller usually just freed slots.
    claimDue: (opts) => (db.inTransaction || hasWork.get({ now: opts.now }) === 1 ? claimTx.immediate(opts) : []),
    releaseWaitingInOrder: (now) => madeDue(s.releaseWaiting.run({ now }).changes),
    noteDue(key) {
      if (key !== undefined && key === stoppedBy) uncounted = key
      else generation++
    },
  }
}
