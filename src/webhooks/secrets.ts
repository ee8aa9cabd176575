import { randomBytes } from 'node:crypto'
import { decodeSecret, SECRET_PREFIX, type SignatureMode } from '../delivery/signer.js'

/** Bytes of a generated secret (docs/delivery.md). */
export const SECRET_BYTES = 32

/** A new `whsec_` + base64(32 random bytes) secret. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

/**
 * Checks a user-supplied secret for `mode` and returns it normalised, or an error message.
 * Standard mode: `whsec_<base64>` (or bare base64) decoding to 24–64 bytes, stored with the
 * prefix. hmac-sha256 mode: any string of 16–256 characters, used as is.
 */
export function normaliseSecret(mode: SignatureMode, secret: string): { secret: string } | { error: string } {
  if (mode === 'hmac-sha256') {
    if (secret.length < 16 || secret.length > 256) return { error: 'must be 16–256 characters in hmac-sha256 mode' }
    if (/[\r\n\0]/.test(secret)) return { error: 'must not contain CR, LF or NUL' }
    return { secret }
  }
  const key = decodeSecret(secret)
  if (key === null) return { error: 'must be whsec_ followed by base64' }
  if (key.length < 24 || key.length > 64) return { error: 'must decode to 24–64 bytes' }
  return { secret: SECRET_PREFIX + key.toString('base64') }
}
