import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Stateless signed tokens: `<prefix><base64url(json claims)>.<base64url(HMAC-SHA256(key, that
 * payload))>`. User tokens (`pbu_`), portal tokens (`ptk_`) and tracked email links (no prefix)
 * are this shape with their own prefix, key and claims.
 */

const BASE64URL = /^[A-Za-z0-9_-]+$/
/** An HMAC-SHA256 in base64url: 32 bytes, 43 characters. */
const MAC = /^[A-Za-z0-9_-]{43}$/

const sign = (key: Buffer | string, body: string): Buffer => createHmac('sha256', key).update(body).digest()

/** Signs `claims` (a JSON object or array) into a token that starts with `prefix`. */
export function issueSignedToken(prefix: string, key: Buffer | string, claims: object): string {
  const body = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url')
  return `${prefix}${body}.${sign(key, body).toString('base64url')}`
}

/**
 * The claims of a token whose MAC verifies (compared in constant time): the parsed JSON object
 * or array, or null when it is malformed, longer than `maxLength` or forged. The caller checks
 * the claims' shape and expiry.
 */
export function readSignedToken(prefix: string, key: Buffer | string, token: string, maxLength: number): Record<string, unknown> | unknown[] | null {
  if (!token.startsWith(prefix) || token.length > maxLength) return null
  const [body, mac, extra] = token.slice(prefix.length).split('.')
  if (!body || !mac || extra !== undefined || !BASE64URL.test(body) || !MAC.test(mac)) return null
  // One spelling only: Node's base64url decoder also takes `+/`, padding, and any value in the
  // unused low bits of the last character.
  if (Buffer.from(mac, 'base64url').toString('base64url') !== mac) return null
  const given = Buffer.from(mac, 'base64url')
  const expected = sign(key, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    const claims: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
    return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown> | unknown[]) : null
  } catch {
    return null
  }
}
