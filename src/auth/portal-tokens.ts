import { createHmac, timingSafeEqual } from 'node:crypto'

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

const sign = (key: Buffer, body: string): Buffer => createHmac('sha256', key).update(body).digest()
const BASE64URL = /^[A-Za-z0-9_-]+$/
/** An HMAC-SHA256 in base64url: 32 bytes, 43 characters. */
const MAC = /^[A-Za-z0-9_-]{43}$/

/** Issues `ptk_<base64url(json {jti, app, ro, exp})>.<base64url(HMAC-SHA256(key, payload))>`. */
export function issuePortalToken(key: Buffer, claims: PortalClaims): string {
  const body = Buffer.from(JSON.stringify({ jti: claims.id, app: claims.appId, ro: claims.readOnly, exp: claims.expiresAt }), 'utf8').toString('base64url')
  return `${PORTAL_TOKEN_PREFIX}${body}.${sign(key, body).toString('base64url')}`
}

/** Verifies a portal token's MAC in constant time and its expiry; null when malformed, forged or expired. */
export function verifyPortalToken(key: Buffer, token: string, now: number): PortalClaims | null {
  if (!token.startsWith(PORTAL_TOKEN_PREFIX) || token.length > 1024) return null
  const [body, mac, extra] = token.slice(PORTAL_TOKEN_PREFIX.length).split('.')
  if (!body || !mac || extra !== undefined || !BASE64URL.test(body) || !MAC.test(mac)) return null
  // One spelling only (Node's decoder also takes padding and stray low bits).
  if (Buffer.from(mac, 'base64url').toString('base64url') !== mac) return null
  const given = Buffer.from(mac, 'base64url')
  const expected = sign(key, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    const c = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { jti?: unknown; app?: unknown; ro?: unknown; exp?: unknown }
    if (typeof c.jti !== 'string' || typeof c.app !== 'string' || typeof c.ro !== 'boolean' || typeof c.exp !== 'number') return null
    if (c.exp <= now) return null
    return { id: c.jti, appId: c.app, readOnly: c.ro, expiresAt: c.exp }
  } catch {
    return null
  }
}
