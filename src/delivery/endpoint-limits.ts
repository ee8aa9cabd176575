import type { Store } from '../store/index.js'
import { circuitState } from './breaker.js'
import { TokenBucket } from './rate-limit.js'
import { createEndpointCache } from './endpoint-cache.js'
import type { EndpointRow } from '../store/endpoints.js'

/**
 * The dispatcher's per-endpoint flow control (docs/delivery.md): requests in flight against
 * `max_concurrency`, a token bucket for `rate_limit`, and a single probe while the breaker is
 * half-open. Endpoint settings are cached and reloaded when the endpoints store's version moves:
 * `refresh()` before each claim keeps `capacity` synchronous; an endpoint not loaded yet has no
 * slot in that claim, and `loadMissing()` after it loads it for the next one.
 * Rows without an endpoint are counted under `#<channel>` (the claim's DUE_KEY), each against
 * its channel's limit in `channelLimits` (none when absent); requests under their origin key
 * (`@<origin>`) against `targetSlots`.
 */
export function createEndpointLimits(
  store: Store,
  channelLimits: ReadonlyMap<string, number> = new Map(),
  /** Slots of a request origin key (`@<origin>`) at `now`, before subtracting those in use; none without it. */
  targetSlots: (key: string, now: number) => number = () => 0,
) {
  const inflight = new Map<string, number>()
  const used = (id: string): number => inflight.get(id) ?? 0
  const buckets = new Map<string, TokenBucket>()
  const cache = createEndpointCache(store)
  // Endpoints a claim asked about before they were loaded.
  const missing = new Set<string>()
  const info = (id: string): EndpointRow | null => {
    const row = cache.peek(id)
    if (row !== undefined) return row
    missing.add(id)
    return null
  }

  const bucketFor = (id: string, rate: number, now: number): TokenBucket => {
    let b = buckets.get(id)
    if (!b) buckets.set(id, (b = new TokenBucket(rate, now)))
    else b.setRate(rate)
    return b
  }

  const capacity = (id: string, now: number): number => {
    if (id.startsWith('#')) return Math.max(0, (channelLimits.get(id) ?? Infinity) - used(id))
    if (id.startsWith('@')) return Math.max(0, targetSlots(id, now) - used(id))
    const l = info(id)
    if (!l) return 0
    const state = circuitState(l, now)
    if (state === 'open') return 0
    let cap = (state === 'half_open' ? 1 : l.maxConcurrency) - used(id)
    if (l.rateLimit !== null) cap = Math.min(cap, bucketFor(id, l.rateLimit, now).available(now))
    return Math.max(0, cap)
  }

  return {
    /** Reloads changed endpoint settings (one version check when nothing changed); before a claim. */
    refresh: (): Promise<void> => cache.refresh(),
    /** Loads the endpoints the last claims met before they were cached; true when there were any (claim again). */
    async loadMissing(): Promise<boolean> {
      if (missing.size === 0) return false
      const ids = [...missing]
      missing.clear()
      await cache.load(ids)
      return true
    },
    /** Slots the endpoint has free now (none for an endpoint not loaded yet). */
    capacity,
    /** Requests this dispatcher has in flight to the endpoint. */
    inFlight: used,
    /**
     * Endpoints the claim skips entirely: those with no free slot, and (with `atMost`) those
     * already holding `atMost` requests or more.
     */
    saturated(now: number, atMost = Infinity): string[] {
      const out: string[] = []
      for (const id of new Set([...inflight.keys(), ...buckets.keys()])) {
        if (used(id) >= atMost || capacity(id, now) === 0) out.push(id)
      }
      return out
    },
    /** Counts a claimed row against its endpoint. */
    acquire(id: string, now: number): void {
      inflight.set(id, (inflight.get(id) ?? 0) + 1)
      if (id.startsWith('#') || id.startsWith('@')) return
      const l = info(id)
      if (l?.rateLimit) bucketFor(id, l.rateLimit, now).take(1, now)
    },
    /** Frees the slot of a settled row. */
    release(id: string): void {
      const n = (inflight.get(id) ?? 1) - 1
      if (n <= 0) inflight.delete(id)
      else inflight.set(id, n)
    },
    /** Milliseconds until an empty bucket earns a token; null when none is empty. */
    nextTokenMs(now: number): number | null {
      let min: number | null = null
      for (const b of buckets.values()) {
        const w = b.waitMs(now)
        if (w > 0) min = min === null ? w : Math.min(min, w)
      }
      return min
    },
  }
}

/** The dispatcher's per-endpoint flow control. */
export type EndpointLimits = ReturnType<typeof createEndpointLimits>
