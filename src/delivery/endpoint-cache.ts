import type { Store } from '../store/index.js'
import type { EndpointRow } from '../store/endpoints.js'

/** Cached endpoint rows for the hot delivery path: looked up synchronously, loaded asynchronously. */
export interface EndpointCache {
  /**
   * Checks the store's endpoint version (one call) and, when it moved, reloads the rows held, so
   * a changed URL, secret, limit or pause is seen by the next claim without a query per request.
   */
  refresh(): Promise<void>
  /** The cached row: null for an endpoint that does not exist, undefined when not loaded yet. */
  peek(id: string): EndpointRow | null | undefined
  /** The row, from the cache or loaded (and cached). */
  get(id: string): Promise<EndpointRow | null>
  /** Loads the rows of `ids` not cached yet (what `peek` found missing). */
  load(ids: Iterable<string>): Promise<void>
}

/**
 * A cache of endpoint rows keyed by id. Any endpoint write bumps the store's version, which makes
 * the next `refresh` reload the rows looked up since the previous reload (the others are dropped); the claim's capacity callback stays synchronous
 * (`peek`), and an endpoint it has never seen is loaded after that claim (one more round).
 */
export function createEndpointCache(store: Store): EndpointCache {
  let cache = new Map<string, EndpointRow | null>()
  // The ids looked up since the last reload: the working set a reload keeps (others are dropped).
  let used = new Set<string>()
  let version = -1
  let reloading: Promise<void> | null = null
  const fetch = async (ids: readonly string[]): Promise<(EndpointRow | null)[]> => Promise.all(ids.map((id) => store.endpoints.getAny(id)))
  return {
    async refresh() {
      const v = await store.endpoints.version()
      // The reload of this version may still be reading: wait for it, or the caller would read
      // the rows of before the write (concurrent sends on a store with real latency).
      if (v === version) return reloading ?? undefined
      version = v
      const ids = [...used].filter((id) => cache.has(id))
      used = new Set()
      const reload = (async () => {
        const rows = await fetch(ids)
        // A reload that another refresh overtook (a newer version) is dropped: that one reloads.
        if (version === v) cache = new Map(ids.map((id, i) => [id, rows[i]!]))
      })()
      reloading = reload
      try {
        await reload
      } finally {
        if (reloading === reload) reloading = null
      }
    },
    peek(id) {
      used.add(id)
      return cache.get(id)
    },
    async get(id) {
      used.add(id)
      const hit = cache.get(id)
      if (hit !== undefined) return hit
      const v = version
      const row = await store.endpoints.getAny(id)
      if (version === v) cache.set(id, row)
      return row
    },
    async load(ids) {
      const missing = [...new Set(ids)].filter((id) => !cache.has(id))
      if (missing.length === 0) return
      const v = version
      const rows = await fetch(missing)
      if (version === v) missing.forEach((id, i) => cache.set(id, rows[i]!))
    },
  }
}
