/**
 * One claim round of the dispatcher (dispatcher.ts): as many due rows as there are free slots,
 * the last slots of the global cap kept for quiet endpoints (docs/delivery.md, isolation).
 */
import type { Store } from '../store/index.js'
import { dueKey, type ClaimedDelivery } from '../store/deliveries.js'
import type { EndpointLimits } from './endpoint-limits.js'
import type { Config } from '../config.js'
import type { ChannelRegistry } from './channel.js'
import { CLAIM_BATCH, QUIET_IN_FLIGHT, RESERVE_SHARE } from './dispatcher-tuning.js'

/** What a claim round reads and counts: the global cap, the reserve, the rows running and the endpoint limits. */
export interface ClaimSlots {
  concurrency: number
  /** The slots of the global cap only quiet endpoints may take. */
  reserve: number
  defaultTimeoutMs: number
  /** Request timeout by channel for rows without an endpoint (ClaimOptions). */
  channelTimeoutsMs: Readonly<Record<string, number>>
  /** Ids of the rows claimed and not yet settled; a round adds the rows it claims. */
  running: Set<string>
  limits: EndpointLimits
  /** Called when a claim stopped looking before every endpoint had its turn. */
  onCutShort: () => void
}

/** The slots of a dispatcher with `channels` under `config`: its reserve, and each row's timeout for its lease. */
export function claimSlots(config: Config, channels: ChannelRegistry, running: Set<string>, limits: EndpointLimits, onCutShort: () => void): ClaimSlots {
  // Each channel's rows lease for its own timeout + the margin (a notification webhook's 5 s, not
  // the email channel's 70 s: an orphaned row waited ~100 s after a kill -9, issue #36).
  const channelTimeoutsMs: Record<string, number> = {}
  for (const [name, c] of channels) if (c.timeoutMs !== undefined) channelTimeoutsMs[name] = c.timeoutMs
  return {
    concurrency: config.concurrency,
    reserve: Math.floor(config.concurrency * RESERVE_SHARE),
    defaultTimeoutMs: Math.max(config.requestTimeoutMs, ...[...channels.values()].map((c) => c.timeoutMs ?? 0)),
    channelTimeoutsMs,
    running,
    limits,
    onCutShort,
  }
}

/**
 * Claims as many due rows as there are free slots through `s` (the store, or the settle's
 * transaction), counts them as running and appends them to `out` as each statement returns
 * (so a caller still holds them if a later one throws); the caller starts their sends (after
 * the commit, when this runs inside the settle transaction). `dueHint` goes with the first
 * claim statement (ClaimOptions).
 */
export async function claimRound(s: Store, now: number, out: ClaimedDelivery[], slots: ClaimSlots, dueHint = false): Promise<void> {
  const { concurrency, reserve, defaultTimeoutMs, channelTimeoutsMs, running, limits, onCutShort } = slots
  for (let first = true; ; first = false) {
    const free = concurrency - running.size
    if (free <= 0) return
    // The last slots of the global cap go only to endpoints with few requests in flight, so
    // slow or hanging endpoints (each holding up to its max_concurrency) can never take them
    // all and stall every other endpoint until their timeouts (docs/delivery.md isolation).
    const general = free - reserve
    const limit = Math.min(general > 0 ? general : free, CLAIM_BATCH)
    const rows = await s.deliveries.claimDue({
      limit,
      now,
      defaultTimeoutMs,
      channelTimeoutsMs,
      onCutShort,
      ...(first && dueHint ? { dueHint } : {}),
      ...(general > 0
        ? { capacity: (key: string) => limits.capacity(key, now), excludeEndpoints: limits.saturated(now) }
        : {
            // Each channel's rows without an endpoint (`#inbox`, `#email`) count as one more
            // endpoint here, so a slow mail server cannot take the reserve either.
            capacity: (key: string) => Math.min(limits.capacity(key, now), QUIET_IN_FLIGHT - limits.inFlight(key)),
            excludeEndpoints: limits.saturated(now, QUIET_IN_FLIGHT),
          }),
    })
    for (const d of rows) {
      running.add(d.id)
      limits.acquire(dueKey(d), now)
      out.push(d)
    }
    if (rows.length < limit) return
  }
}

