/**
 * A consumer's claim on a pull endpoint on PostgreSQL (docs/pull-endpoints.md), as SQLite's
 * pull-claim.ts. The endpoint's transaction-level advisory lock (the claimer's ENDPOINT_LOCK_SPACE)
 * serialises the claims of every consumer on every node for one endpoint, so `max_concurrency`
 * counts the rows every node has in flight; rows are still read `FOR UPDATE SKIP LOCKED`.
 */
import type { Async } from '../contract.js'
import { newClaimToken, type ClaimedDelivery, type DeliveriesStore, type PullClaimOptions } from '../deliveries.js'
import { inPgTransaction, endpointLockKey } from './delivery-claim.js'
import { ENDPOINT_LOCK_SPACE, PG_DUE_KEY } from './delivery-claim-sql.js'
import { DELIVERY_COLUMNS } from './delivery-list.js'
import type { PgQueryable } from './queryable.js'
import { bucketRoom } from '../pull-bucket.js'

const CLAIM_COLUMNS = DELIVERY_COLUMNS.replace(/(^|,\s*)([a-z_]+)/g, '$1d.$2')

const SQL = {
  lock: `SELECT pg_advisory_xact_lock(${ENDPOINT_LOCK_SPACE}, $1::integer)`,
  // A lapsed lease: the attempt stays spent (docs/delivery.md); the attempt log says `expired`. $1 endpoint, $2 now.
  logExpired: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT id, attempts, updated_at, greatest($2::bigint - updated_at, 0), 'expired', NULL, 'lease_expired', NULL FROM deliveries
     WHERE status = 'in_flight' AND endpoint_id = $1 AND lease_until <= $2`,
  expire: `UPDATE deliveries
      SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'lease_expired' ELSE last_error END,
          completed_at = CASE WHEN attempts >= max_attempts THEN $2::bigint ELSE NULL END,
          claim_token = NULL, lease_until = NULL, next_attempt_at = $2, updated_at = $2
    WHERE status = 'in_flight' AND endpoint_id = $1 AND lease_until <= $2`,
  exhausted: `UPDATE deliveries SET status = 'dead', last_error = COALESCE(last_error, 'attempts_exhausted'),
      claim_token = NULL, completed_at = $2, updated_at = $2
    WHERE status = 'pending' AND ${PG_DUE_KEY()} = $1 AND next_attempt_at <= $2 AND attempts >= max_attempts`,
  // Under the endpoint's lock: its free slots across all nodes, and its token bucket (the dispatcher's endpoint_tokens).
  free: `SELECT e.max_concurrency - (SELECT count(*) FROM deliveries WHERE endpoint_id = e.id AND status = 'in_flight') AS free, e.ordered,
      e.rate_limit AS rate, t.tokens, t.updated_at AS "tokensAt"
    FROM endpoints e LEFT JOIN endpoint_tokens t ON t.endpoint_id = e.id WHERE e.id = $1`,
  saveTokens: `INSERT INTO endpoint_tokens (endpoint_id, tokens, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (endpoint_id) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at`,
  // $1 endpoint, $2 now, $3 limit, $4 ordered, $5 event types (null: all), $6 token, $7 lease.
  claim: `WITH c AS (
      SELECT d.id FROM deliveries d
       WHERE d.status = 'pending' AND ${PG_DUE_KEY('d.')} = $1 AND d.next_attempt_at <= $2
         AND ($5::text[] IS NULL OR d.event_type = ANY($5::text[]))
         AND NOT (d.ordering_key IS NOT NULL AND $4::integer = 1 AND EXISTS (SELECT 1 FROM deliveries o
               WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key AND o.status IN ('pending', 'in_flight')
                 AND ((o.status = 'pending' AND o.id < d.id) OR (o.status = 'in_flight' AND o.id <> d.id))))
       ORDER BY d.next_attempt_at, d.id LIMIT $3
       FOR UPDATE OF d SKIP LOCKED)
    UPDATE deliveries d SET status = 'in_flight', claim_token = $6::text, attempts = d.attempts + 1, updated_at = $2, lease_until = $7
      FROM c WHERE d.id = c.id
    RETURNING ${CLAIM_COLUMNS}, (SELECT body FROM events WHERE id = d.event_id) AS "eventBody"`,
} as const

/** The claimPull of the PostgreSQL delivery family over `q`. */
export function createPgPullClaimer(q: PgQueryable): Async<DeliveriesStore>['claimPull'] {
  return (o: PullClaimOptions) =>
    inPgTransaction(q, async (c): Promise<ClaimedDelivery[]> => {
      const ep = o.endpointId
      await c.query(SQL.lock, [endpointLockKey(ep)])
      await c.query(SQL.logExpired, [ep, o.now])
      await c.query(SQL.expire, [ep, o.now])
      await c.query(SQL.exhausted, [ep, o.now])
      const room = (await c.query<{ free: number; ordered: number; rate: number | null; tokens: number | null; tokensAt: number | null }>(SQL.free, [ep])).rows[0]
      const bucket = bucketRoom(room?.rate ?? null, room?.tokens == null ? undefined : { tokens: room.tokens, at: room.tokensAt! }, o.now)
      const n = Math.min(o.max, Number(room?.free ?? 0), bucket.room)
      if (n <= 0) return []
      const { rows } = await c.query<ClaimedDelivery>(SQL.claim, [ep, o.now, n, room!.ordered, o.eventTypes, newClaimToken({}), o.now + o.visibilityMs])
      if (room!.rate !== null) {
        const b = bucket.take(rows.length)
        await c.query(SQL.saveTokens, [ep, b.tokens, b.at])
      }
      return rows.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1))
    })
}
