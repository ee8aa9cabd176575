import { createHmac } from 'node:crypto'

/** The prefix of Standard Webhooks secrets. */
export const SECRET_PREFIX = 'whsec_'

/** How an endpoint signs its requests (docs/delivery.md). */
export type SignatureMode = 'standard' | 'hmac-sha256'

/** The signing material of one endpoint at one moment. */
export interface SigningKeys {
  mode: SignatureMode
  /** The current secret, as stored (`whsec_…` in standard mode, any string in hmac-sha256 mode). */
  secret: string
  /** Older secrets still inside their grace period at the time of signing. */
  previous: readonly string[]
}

/** Decodes a `whsec_<base64>` (or bare base64) secret into its key bytes; null when malformed. */
export function decodeSecret(secret: string): Buffer | null {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret
  if (b64.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return null
  return Buffer.from(b64, 'base64')
}

// Decoded keys by secret (null: not a standard key): decoding (a regex and a base64 pass)
// measured about a fifth of a signature. Bounded so that rotated-away secrets do not pile up.
const keys = new Map<string, Buffer | null>()
const KEY_CACHE_SIZE = 1024

/** The decoded key of a standard secret, from the cache; null when the secret is not one. */
function signingKey(secret: string): Buffer | null {
  let key = keys.get(secret)
  if (key === undefined) {
    key = decodeSecret(secret)
    if (keys.size >= KEY_CACHE_SIZE) keys.clear()
    keys.set(secret, key)
  }
  return key
}

/**
 * One Standard Webhooks v1 signature: `v1,` + base64 HMAC-SHA256 over `${id}.${timestamp}.${body}`
 * keyed by the decoded secret bytes (exactly what the `standardwebhooks` Webhook class verifies).
 */
export function signStandard(secret: string, id: string, timestamp: number, body: string): string {
  const key = signingKey(secret)
  if (key === null) throw new Error('malformed signing secret')
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')
  return `v1,${mac}`
}

/** GitHub-style `sha256=<hex>` over the body, keyed by the secret string's UTF-8 bytes. */
export function signHmacSha256(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`
}

/**
 * The signature headers of one attempt. Standard mode sends every signature (current first)
 * space-separated in `webhook-signature`. hmac-sha256 mode sends the current one in
 * `x-postbox-signature` and, during a rotation grace period, the old ones in
 * `x-postbox-signature-previous`: a GitHub-style receiver compares one value, so a list in the
 * main header would break it.
 */
export function signatureHeaders(keys: SigningKeys, id: string, timestampSec: number, body: string): Record<string, string> {
  if (keys.mode === 'hmac-sha256') {
    const out: Record<string, string> = { 'x-postbox-signature': signHmacSha256(keys.secret, body) }
    if (keys.previous.length > 0) {
      out['x-postbox-signature-previous'] = keys.previous.map((s) => signHmacSha256(s, body)).join(' ')
    }
    return out
  }
  const all = [signStandard(keys.secret, id, timestampSec, body)]
  // A previous secret that is not a standard key (left from before a switch out of hmac-sha256
  // mode) cannot sign here; skipping it keeps the current signature going out.
  for (const p of keys.previous) if (signingKey(p) !== null) all.push(signStandard(p, id, timestampSec, body))
  return { 'webhook-signature': all.join(' ') }
}
