import { createHmac } from 'node:crypto'
import { issueSignedToken, readSignedToken } from '../lib/signed-token.js'

/** Portal tokens start with this prefix (API keys with `pbk_`, user tokens with `pbu_`). */
export const PORTAL_TOKEN_PREFIX = 'ptk_'

/** What a verified portal token says; the caller still checks that its stored row exists. */
export interface PortalClaims {
  /** The stored row's id (`ptk_…`): deleting the row (with its application) revokes the token. */
  id: string
  appId: string
  readOnly: boolean
  expiresAt: number
}

/** The portal key: derived from the server's token key, so a user token's MAC never verifies as a portal token's. */
export function portalKey(tokenKey: Buffer | string): Buffer {
  return createHmac('sha256', tokenKey).update('postbox portal tokens v1').digest()
}


/**
 * The most characters of the application's name a token carries, for the portal's header only
 * (the name is up to 200 characters; 64 keep the token well under its 1,024-character limit).
 */
export const PORTAL_NAME_MAX = 64

/**
 * Issues `ptk_<base64url(json {jti, app, ro, exp, name?})>.<base64url(HMAC-SHA256(key, payload))>`.
 * `name` is the application's name when the token was issued, shown by the portal; the server
 * never reads it.
 */
export function issuePortalToken(key: Buffer, claims: PortalClaims, appName?: string): string {
  const name = appName === undefined ? {} : { name: Array.from(appName).slice(0, PORTAL_NAME_MAX).join('') }
  return issueSignedToken(PORTAL_TOKEN_PREFIX, key, { jti: claims.id, app: claims.appId, ro: claims.readOnly, exp: claims.expiresAt, ...name })
}

/** Verifies a portal token's MAC in constant time and its expiry; null when malformed, forged or expired. */
export function verifyPortalToken(key: Buffer, token: string, now: number): PortalClaims | null {
  const c = readSignedToken(PORTAL_TOKEN_PREFIX, key, token, 1024)
  if (c === null || Array.isArray(c) || typeof c.jti !== 'string' || typeof c.app !== 'string' || typeof c.ro !== 'boolean' || typeof c.exp !== 'number') return null
  if (c.exp <= now) return null
  return { id: c.jti, appId: c.app, readOnly: c.ro, expiresAt: c.exp }
}
