import { randomBytes } from 'node:crypto'

/** The id prefixes Postbox uses, one per resource kind. */
export type IdPrefix = 'evt' | 'ep' | 'dlv' | 'ntf' | 'msg' | 'key' | 'usr'

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz' // Crockford base32, lower case

let lastMs = 0
let lastRand = new Uint8Array(10)

/**
 * Returns a new id such as `evt_01j9…`: 48 bits of milliseconds then 80 random bits, base32.
 * Ids made in the same millisecond increment the random part, so ids from one process sort
 * in creation order; the ordering barrier and "newest first" lists rely on that.
 */
export function newId(prefix: IdPrefix, nowMs: number = Date.now()): string {
  if (nowMs <= lastMs) {
    nowMs = lastMs
    for (let i = lastRand.length - 1; i >= 0; i--) {
      const v = lastRand[i]!
      if (v < 255) {
        lastRand[i] = v + 1
        break
      }
      lastRand[i] = 0
    }
  } else {
    lastMs = nowMs
    lastRand = new Uint8Array(randomBytes(10))
  }
  return `${prefix}_${encodeTime(nowMs)}${encodeRandom(lastRand)}`
}

function encodeTime(ms: number): string {
  let out = ''
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32]! + out
    ms = Math.floor(ms / 32)
  }
  return out
}

function encodeRandom(bytes: Uint8Array): string {
  let bits = 0n
  for (const b of bytes) bits = (bits << 8n) | BigInt(b)
  let out = ''
  for (let i = 0; i < 16; i++) {
    out = ALPHABET[Number(bits & 31n)]! + out
    bits >>= 5n
  }
  return out
}

/** Returns a random opaque token (base64url) of `bytes` random bytes. */
export function randomToken(bytes = 16): string {
  return randomBytes(bytes).toString('base64url')
}
