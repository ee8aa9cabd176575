import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** End-user tokens start with this prefix, so they are easy to tell from API keys (`pbk_`). */
export const USER_TOKEN_PREFIX = 'pbu_'

/** A verified end-user token. */
export interface UserTokenClaims {
  userId: string
  expiresAt: number
}

function sign(key: Buffer | string, body: string): Buffer {
  return createHmac('sha256', key).update(body).digest()
}

/**
 * Issues a token `pbu_<base64url(json {sub, exp})>.<base64url(HMAC-SHA256(key, that payload))>`.
 * Stateless: revoking one token means rotating the key (which revokes them all).
 */
export function issueUserToken(key: Buffer | string, userId: string, expiresAt: number): string {
  const body = Buffer.from(JSON.stringify({ sub: userId, exp: expiresAt }), 'utf8').toString('base64url')
  return `${USER_TOKEN_PREFIX}${body}.${sign(key, body).toString('base64url')}`
}

/** Verifies a token in constant time; null when malformed, forged or expired at `now`. */
export function verifyUserToken(key: Buffer | string, token: string, now: number): UserTokenClaims | null {
  if (!token.startsWith(USER_TOKEN_PREFIX) || token.length > 2048) return null
  const [body, mac, extra] = token.slice(USER_TOKEN_PREFIX.length).split('.')
  if (!body || !mac || extra !== undefined) return null
  const given = Buffer.from(mac, 'base64url')
  const expected = sign(key, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { sub?: unknown; exp?: unknown }
    if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number') return null
    if (claims.exp <= now) return null
    return { userId: claims.sub, expiresAt: claims.exp }
  } catch {
    return null
  }
}

/**
 * The token key: `configured` (POSTBOX_TOKEN_SECRET) when set, else a secret generated once into
 * `<dataDir>/token-secret.txt` with mode 0600, so tokens survive restarts.
 */
export function loadTokenKey(configured: string | null, dataDir: string): Buffer | string {
  if (configured) return configured
  const file = join(dataDir, 'token-secret.txt')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(32).toString('base64url')
  writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' })
  return secret
}
