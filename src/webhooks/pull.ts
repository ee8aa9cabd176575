/**
 * Pull endpoints (docs/pull-endpoints.md): consumers claim an endpoint's deliveries and
 * settle them with the claim token, on the store's claim/settle engine. A claim spends an
 * attempt; ack ends the delivery as success; nack retries, ends or snoozes it; release refunds it.
 */
import type { Config } from '../config.js'
import { errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import type { Store } from '../store/index.js'
import type { ClaimedDelivery, Delivery, Outcome, SettleInput } from '../store/deliveries.js'
import type { EndpointRow } from '../store/endpoints.js'
import { MAX_RETRY_DELAY_MS, nextRetryAt } from '../delivery/retry-policy.js'
import { parseOrThrow, throwIfIssues, type Issue } from './rules.js'
import {
  AckIn, ClaimIn, DEFAULT_CLAIM_MAX, DEFAULT_SNOOZE, DEFAULT_VISIBILITY, durationMs, NackIn, ReleaseIn,
  type ClaimInput, type PullResult,
} from './pull-schemas.js'
import type { AppScope } from './types.js'

/** Snooze delays a nack may ask for: 1 minute to 1 hour (docs/pull-endpoints.md). */
const SNOOZE_MIN_MS = 60_000
const SNOOZE_MAX_MS = 3_600_000

/** One claimed delivery as the API answers it. */
export interface ClaimedItemOut {
  delivery_id: string
  claim_token: string
  attempt: number
  lease_until: string
  ordering_key: string | null
  event: { id: string; type: string; timestamp: string; data: unknown } | null
}

/** The pull service: claim and the three settles, each on one pull endpoint of the caller's scope. */
export interface PullService {
  /** Claims up to `max` due deliveries; with `wait`, waits for one up to that long (`signal` ends the wait early). */
  claim(endpointId: string, input: unknown, scope?: AppScope, signal?: AbortSignal): Promise<{ items: ClaimedItemOut[] }>
  /** Acks each item: `acked`, or `missed` for a stale token. */
  ack(endpointId: string, input: unknown, scope?: AppScope): Promise<{ results: PullResult[] }>
  /** Nacks each item with its outcome: `retry_scheduled`, `dead`, `snoozed`, or `missed`. */
  nack(endpointId: string, input: unknown, scope?: AppScope): Promise<{ results: PullResult[] }>
  /** Releases each item (the attempt is refunded): `released`, or `missed`. */
  release(endpointId: string, input: unknown, scope?: AppScope): Promise<{ results: PullResult[] }>
}

/** A claimed row as the API shows it. */
export function claimedItem(d: ClaimedDelivery): ClaimedItemOut {
  return {
    delivery_id: d.id,
    claim_token: d.claimToken,
    attempt: d.attempts,
    lease_until: toIso(d.leaseUntil),
    ordering_key: d.orderingKey,
    event: d.eventBody === null ? null : (JSON.parse(d.eventBody) as ClaimedItemOut['event']),
  }
}

/** What the pull service needs: the store, config (retry schedule), clock and the endpoint lookup that applies the scope. */
export interface PullDeps {
  store: Store
  config: Pick<Config, 'retrySchedule'>
  clock: Clock
  endpointOr404(id: string, scope?: string | null): Promise<EndpointRow>
  rng?: () => number
}

/** Builds the pull service. */
export function createPullService(deps: PullDeps): PullService {
  const { store, clock } = deps
  const rng = deps.rng ?? Math.random

  const pullEndpoint = async (id: string, scope: AppScope): Promise<EndpointRow> => {
    const ep = await deps.endpointOr404(id, scope ?? null)
    if (ep.mode !== 'pull') throw errors.conflict('This endpoint is a push endpoint: Postbox sends its deliveries; only pull endpoints are claimed')
    return ep
  }

  const claimOnce = async (ep: EndpointRow, i: ClaimInput): Promise<ClaimedDelivery[]> =>
    store.deliveries.claimPull({
      endpointId: ep.id,
      max: i.max ?? DEFAULT_CLAIM_MAX,
      visibilityMs: durationMs(i.visibility ?? DEFAULT_VISIBILITY),
      eventTypes: i.event_types ?? null,
      now: clock.now(),
    })

  /** Resolves when a commit makes rows due (any node: the store's onDue), when `over` resolves, or on abort. */
  const dueOrOver = (over: Promise<void>, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        off()
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const off = store.onDue(done)
      void over.then(done)
      signal?.addEventListener('abort', done)
    })

  /** Settles `inputs` (already matched to rows of `ep`); `missed` where the row or token does not match. */
  const settle = async (ep: EndpointRow, items: readonly { delivery_id: string; claim_token: string }[], build: (row: Delivery, n: number) => { input: SettleInput; result: PullResult['result'] }): Promise<{ results: PullResult[] }> => {
    const rows = await Promise.all(items.map((it) => store.deliveries.get(it.delivery_id)))
    const planned = items.map((it, n) => {
      const row = rows[n]
      // Another endpoint's delivery, or one not claimed with this token: nothing changes.
      if (!row || row.endpointId !== ep.id || row.status !== 'in_flight' || row.claimToken !== it.claim_token) return null
      return build(row, n)
    })
    const inputs = planned.filter((p): p is NonNullable<typeof p> => p !== null)
    const settled = await store.deliveries.settle(inputs.map((p) => p.input), clock.now())
    const byId = new Map<string, PullResult['result']>()
    inputs.forEach((p, k) => {
      const s = settled[k]!
      if (s.result === 'missed') return
      byId.set(p.input.id, p.input.outcome.kind === 'retry' && s.status === 'dead' ? 'dead' : p.result)
    })
    return { results: items.map((it, n) => ({ delivery_id: it.delivery_id, result: planned[n] === null ? 'missed' : (byId.get(it.delivery_id) ?? 'missed') })) }
  }

  /** The attempt a settle logs: from the claim (updated_at) to now. */
  const attemptOf = (row: Delivery, error: string | null = null) => {
    const now = clock.now()
    return { startedAt: row.updatedAt, durationMs: Math.max(0, now - row.updatedAt), error }
  }

  return {
    async claim(endpointId, input, scope, signal) {
      const i = parseOrThrow(ClaimIn, input ?? {})
      const ep = await pullEndpoint(endpointId, scope)
      // The wait is real time (a timer), not the injected clock, which may stand still in tests.
      const waitMs = durationMs(i.wait ?? '0s')
      let timedOut = waitMs === 0
      let timer: ReturnType<typeof setTimeout> | undefined
      const over = new Promise<void>((resolve) => {
        if (timedOut) return resolve()
        timer = setTimeout(() => {
          timedOut = true
          resolve()
        }, waitMs)
      })
      try {
        for (;;) {
          const claimed = await claimOnce(ep, i)
          if (claimed.length > 0 || timedOut || signal?.aborted) return { items: claimed.map(claimedItem) }
          await dueOrOver(over, signal)
        }
      } finally {
        clearTimeout(timer)
      }
    },
    async ack(endpointId, input, scope) {
      const i = parseOrThrow(AckIn, input)
      const ep = await pullEndpoint(endpointId, scope)
      return settle(ep, i.items, (row, n) => ({
        input: { id: row.id, claimToken: i.items[n]!.claim_token, outcome: { kind: 'success' }, attempt: attemptOf(row), logAs: 'acked' },
        result: 'acked',
      }))
    },
    async nack(endpointId, input, scope) {
      const i = parseOrThrow(NackIn, input)
      const issues: Issue[] = []
      i.items.forEach((it, n) => {
        if (it.delay === undefined) return
        const ms = durationMs(it.delay)
        const outcome = it.outcome ?? 'retry'
        if (outcome === 'dead') issues.push({ path: `items.${n}.delay`, message: 'a dead outcome takes no delay' })
        else if (outcome === 'retry' && ms > MAX_RETRY_DELAY_MS) issues.push({ path: `items.${n}.delay`, message: 'must be at most 24h' })
        else if (outcome === 'snooze' && (ms < SNOOZE_MIN_MS || ms > SNOOZE_MAX_MS)) issues.push({ path: `items.${n}.delay`, message: 'must be from 1m to 1h' })
      })
      throwIfIssues(issues)
      const ep = await pullEndpoint(endpointId, scope)
      const schedule = ep.retrySchedule ?? deps.config.retrySchedule
      return settle(ep, i.items, (row, n) => {
        const it = i.items[n]!
        const now = clock.now()
        const attempt = attemptOf(row, it.error ?? null)
        const kind = it.outcome ?? 'retry'
        let outcome: Outcome
        if (kind === 'dead') outcome = { kind: 'dead' }
        else if (kind === 'snooze') outcome = { kind: 'snooze', at: now + durationMs(it.delay ?? DEFAULT_SNOOZE) }
        else outcome = { kind: 'retry', at: it.delay !== undefined ? now + durationMs(it.delay) : (nextRetryAt(now, schedule, row.attempts, rng) ?? now) }
        const result = kind === 'dead' ? 'dead' : kind === 'snooze' ? 'snoozed' : 'retry_scheduled'
        return { input: { id: row.id, claimToken: it.claim_token, outcome, attempt, ...(kind === 'snooze' ? { logAs: 'snoozed' } : {}) }, result }
      })
    },
    async release(endpointId, input, scope) {
      const i = parseOrThrow(ReleaseIn, input)
      const ep = await pullEndpoint(endpointId, scope)
      const delay = durationMs(i.delay ?? '0s')
      return settle(ep, i.items, (row, n) => ({
        // A release with a delay is a refund due later: the snooze transition, logged as released.
        input: {
          id: row.id, claimToken: i.items[n]!.claim_token, attempt: attemptOf(row), logAs: 'released',
          outcome: delay > 0 ? { kind: 'snooze', at: clock.now() + delay } : { kind: 'release' },
        },
        result: 'released',
      }))
    },
  }
}
