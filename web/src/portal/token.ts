/** What a portal token says about itself (its body is base64url JSON; the server checks its signature). */
export interface PortalClaims {
  appId: string
  /** The application's name when the link was issued (links issued before it was carried: null). */
  appName: string | null
  readOnly: boolean
  /** Epoch ms. */
  expiresAt: number
}

/** The sessionStorage entry holding the portal token (never localStorage, never a URL). */
export const TOKEN_ENTRY = 'postbox.portal.token'

/**
 * Reads `ptk_<base64url(json)>.<mac>` for display only: which application (its id and name),
 * read-only or not, and when it expires. Null when the token does not have that shape; the API decides anyway.
 */
export function readClaims(token: string): PortalClaims | null {
  const m = /^ptk_([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(token)
  if (!m) return null
  try {
    const b64 = m[1]!.replace(/-/g, '+').replace(/_/g, '/')
    const json = JSON.parse(decodeURIComponent(escape(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4))))) as { app?: unknown; ro?: unknown; exp?: unknown; name?: unknown }
    if (typeof json.app !== 'string' || typeof json.exp !== 'number') return null
    return { appId: json.app, appName: typeof json.name === 'string' && json.name ? json.name : null, readOnly: json.ro === true, expiresAt: json.exp }
  } catch {
    return null
  }
}

/**
 * Takes `#token=…` out of the address (so it is neither bookmarked nor shown) and returns it;
 * otherwise the token this tab already holds.
 */
export function takeToken(storage: { get(n: string): string | null; set(n: string, v: string): void }): string | null {
  const m = /^#token=([^&]+)/.exec(location.hash)
  if (m) {
    const token = decodeURIComponent(m[1]!)
    storage.set(TOKEN_ENTRY, token)
    history.replaceState(null, '', location.pathname + '#/endpoints')
    return token
  }
  return storage.get(TOKEN_ENTRY)
}
