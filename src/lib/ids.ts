import { randomBytes, randomFillSync } from 'node:crypto'

/** The id prefixes Postbox uses, one per resource kind. */
export type IdPrefix = 'evt' | 'ep' | 'dlv' | 'ntf' | 'msg' | 'key' | 'usr' | 'app' | 'ptk'

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz' // Crockford base32, lower case

let lastMs = 0
let lastTime = '0000000000' // encodeTime(lastMs)
const lastRand = new Uint8Array(10)

// Random bytes come from a pool refilled 256 ids at a time: one randomFillSync per 2.5 KiB
// instead of one randomBytes call (and Buffer) per id, which was most of newId's cost.
const pool = Buffer.alloc(10 * 256)
let poolPos = pool.length

/**
 * Returns a new id such as `evt_01j9…`: 48 bits of milliseconds then 80 random bits, base32.
 * Ids made in the same millisecond increment the random part, so ids from one process sort
 * in creation order; the ordering barrier and "newest first" lists rely on that.
 */
export function newId(prefix: IdPrefix, nowMs: number = Date.now()): string {
  if (nowMs <= lastMs) {
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
    lastTime = encodeTime(nowMs)
    if (poolPos >= pool.length) {
      randomFillSync(pool)
      poolPos = 0
    }
    lastRand.set(pool.subarray(poolPos, poolPos + 10))
    poolPos += 10
  }
  return `${prefix}_${lastTime}${encode40(lastRand, 0)}${encode40(lastRand, 5)}`
}

/**
 * The smallest id `newId(prefix, ms)` can return: every id made at `ms` or later sorts at or
 * above it, every earlier one below (a time range of a newest-first list as a range of ids).
 */
export function idFloor(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${encodeTime(Math.min(Math.max(0, Math.floor(ms)), 2 ** 48 - 1))}${'0'.repeat(16)}`
}

function encodeTime(ms: number): string {
  let out = ''
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32]! + out
    ms = Math.floor(ms / 32)
  }
  return out
}

/** Encodes 5 bytes (40 bits, exact in a double) as 8 base32 characters, most significant first. */
function encode40(bytes: Uint8Array, at: number): string {
  let n = bytes[at]! * 2 ** 32 + (((bytes[at + 1]! << 24) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 8) | bytes[at + 4]!) >>> 0)
  let out = ''
  for (let i = 0; i < 8; i++) {
    out = ALPHABET[n % 32]! + out
    n = Math.floor(n / 32)
  }
  return out
}

/** Returns a random opaque token (base64url) of `bytes` random bytes. */
export function randomToken(bytes = 16): string {
  return randomBytes(bytes).toString('base64url')
}
