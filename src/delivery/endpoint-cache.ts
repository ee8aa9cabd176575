import type { Store } from '../store/index.js'
import type { EndpointRow } from '../store/endpoints.js'

/**
 * A read-through cache of endpoint rows for the hot delivery path. Any endpoint write in this
 * process bumps the store's version, which empties the cache, so a changed URL, secret, limit
 * or pause is seen by the next delivery without a query per request.
 */
export function createEndpointCache(store: Store): (id: string) => EndpointRow | null {
  const cache = new Map<string, EndpointRow | null>()
  let version = -1
  return (id) => {
    const v = store.endpoints.version()
    if (v !== version) {
      cache.clear()
      version = v
    }
    let row = cache.get(id)
    if (row === undefined) {
      row = store.endpoints.getAny(id)
      cache.set(id, row)
    }
    return row
  }
}
