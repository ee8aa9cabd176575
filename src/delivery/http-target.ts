import type { EndpointRow } from '../store/endpoints.js'

/** What every request to one endpoint shares, worked out once per endpoint row. */
export interface Target {
  origin: string
  /** Path and query string. */
  path: string
  /** The endpoint's custom headers, flat and lower-cased, without any name Postbox sets. */
  headers: readonly string[]
}

/** True for a (lower-case) header Postbox sets on every request; a custom header never replaces it. */
export const isPostboxHeader = (lower: string): boolean =>
  lower === 'content-type' || lower === 'user-agent' || lower.startsWith('webhook-') || lower.startsWith('postbox-') || lower.startsWith('x-postbox-')

/**
 * Parses an endpoint's URL and custom headers once per row object. The endpoint cache hands out
 * the same row until the endpoint changes, so a changed URL or header set is a new key.
 */
export function createTargetCache(): (ep: EndpointRow) => Target {
  const cache = new WeakMap<EndpointRow, Target>()
  return (ep) => {
    let t = cache.get(ep)
    if (t === undefined) {
      const url = new URL(ep.url)
      const headers: string[] = []
      for (const [k, v] of Object.entries(ep.headers)) {
        const lower = k.toLowerCase()
        if (!isPostboxHeader(lower)) headers.push(lower, v)
      }
      t = { origin: url.origin, path: url.pathname + url.search, headers }
      cache.set(ep, t)
    }
    return t
  }
}
