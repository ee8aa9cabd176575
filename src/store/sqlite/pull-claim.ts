/**
 * A consumer's claim on a pull endpoint on SQLite (docs/pull-endpoints.md): the dispatcher never
 * claims these rows (BLOCKED in delivery-claim-sql.ts), consumers do, through this one transaction.
 */
import { prepareAll, type Db } from './db.js'
import { DELIVERY_COLUMNS } from '../delivery-rows.js'
import { newClaimToken, type ClaimedDelivery, type DeliveriesStore, type PullClaimOptions } from '../deliveries.js'
import { DUE_KEY } from './delivery-claim-sql.js'
import { bucketRoom, type PullBucket } from '../pull-bucket.js'

// The rows of one endpoint are read from deliveries_endpoint_due (DUE_KEY spelled as its index).
const OF_ENDPOINT = `${DUE_KEY()} = @ep`

const SQL = {
  // A lapsed lease: the consumer died or gave up; the attempt stays spent (docs/delivery.md), the attempt log says `expired`.
  logExpired: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT id, attempts, updated_at, max(@now - updated_at, 0), 'expired', NULL, 'lease_expired', NULL FROM deliveries
     WHERE status = 'in_flight' AND endpoint_id = @ep AND lease_until <= @now`,
  expire: `UPDATE deliveries
      SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'lease_expired' ELSE last_error END,
          completed_at = CASE WHEN attempts >= max_attempts THEN @now ELSE NULL END,
          claim_token = NULL, lease_until = NULL, next_attempt_at = @now, updated_at = @now
    WHERE status = 'in_flight' AND endpoint_id = @ep AND lease_until <= @now`,
  exhausted: `UPDATE deliveries SET status = 'dead', last_error = COALESCE(last_error, 'attempts_exhausted'),
      claim_token = NULL, completed_at = @now, updated_at = @now
    WHERE status = 'pending' AND ${OF_ENDPOINT} AND next_attempt_at <= @now AND attempts >= max_attempts`,
  free: `SELECT e.max_concurrency - (SELECT count(*) FROM deliveries WHERE endpoint_id = e.id AND status = 'in_flight') AS free, e.ordered,
      e.rate_limit AS rate
    FROM endpoints e WHERE e.id = @ep`,
  // Oldest due first; on an ordered endpoint a row waits while an older row of its key is unfinished.
  candidates: `SELECT d.id FROM deliveries d INDEXED BY deliveries_endpoint_due
    WHERE d.status = 'pending' AND ${DUE_KEY('d.')} = @ep AND d.next_attempt_at <= @now
      AND (@types IS NULL OR d.event_type IN (SELECT value FROM json_each(@types)))
      AND NOT (d.ordering_key IS NOT NULL AND @ordered = 1 AND EXISTS (SELECT 1 FROM deliveries o
            WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key AND o.status IN ('pending', 'in_flight')
              AND ((o.status = 'pending' AND o.id < d.id) OR (o.status = 'in_flight' AND o.id <> d.id))))
    ORDER BY d.next_attempt_at, d.id LIMIT @n`,
  claim: `UPDATE deliveries SET status = 'in_flight', claim_token = @token, attempts = attempts + 1, updated_at = @now, lease_until = @lease
    WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending'
    RETURNING ${DELIVERY_COLUMNS}, (SELECT body FROM events WHERE id = deliveries.event_id) AS eventBody`,
} as const

/**
 * The claimPull of the SQLite delivery store over `db`. One process serves a file (the lease,
 * docs/operations.md), so the endpoints' rate buckets live in its memory.
 */
export function createPullClaimer(db: Db): DeliveriesStore['claimPull'] {
  const s = prepareAll(db, SQL)
  const buckets = new Map<string, PullBucket>()
  const candidates = s.candidates.pluck()
  const tx = db.transaction((o: PullClaimOptions): ClaimedDelivery[] => {
    const ep = o.endpointId
    s.logExpired.run({ ep, now: o.now })
    s.expire.run({ ep, now: o.now })
    s.exhausted.run({ ep, now: o.now })
    const room = s.free.get({ ep }) as { free: number; ordered: number; rate: number | null } | undefined
    const bucket = bucketRoom(room?.rate ?? null, buckets.get(ep), o.now)
    const n = Math.min(o.max, room?.free ?? 0, bucket.room)
    if (n <= 0) return []
    const ids = candidates.all({ ep, now: o.now, n, ordered: room!.ordered, types: o.eventTypes === null ? null : JSON.stringify(o.eventTypes) }) as string[]
    if (ids.length === 0) return []
    const rows = s.claim.all({ ids: JSON.stringify(ids), token: newClaimToken({}), now: o.now, lease: o.now + o.visibilityMs }) as ClaimedDelivery[]
    if (room!.rate !== null) buckets.set(ep, bucket.take(rows.length))
    return rows.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1))
  })
  return (o) => (db.inTransaction ? tx(o) : tx.immediate(o))
}
