import { randomBytes } from 'node:crypto'
import { chmodSync, closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, MIN_TOKEN_SECRET_LENGTH } from '../config.js'
import { issueSignedToken, readSignedToken } from '../lib/signed-token.js'

/** End-user tokens start with this prefix, so they are easy to tell from API keys (`pbk_`). */
export const USER_TOKEN_PREFIX = 'pbu_'

/** A verified end-user token. */
export interface UserTokenClaims {
  userId: string
  expiresAt: number
  /** The one application whose messages the token sees, or null for all of them. */
  appId: string | null
}

/**
 * Issues a token `pbu_<base64url(json {sub, exp, app?})>.<base64url(HMAC-SHA256(key, that payload))>`.
 * Stateless: revoking one token means rotating the key (which revokes them all).
 */
export function issueUserToken(key: Buffer | string, userId: string, expiresAt: number, appId: string | null = null): string {
  return issueSignedToken(USER_TOKEN_PREFIX, key, appId === null ? { sub: userId, exp: expiresAt } : { sub: userId, exp: expiresAt, app: appId })
}

/** Verifies a token in constant time; null when malformed, forged or expired at `now`. */
export function verifyUserToken(key: Buffer | string, token: string, now: number): UserTokenClaims | null {
  const claims = readSignedToken(USER_TOKEN_PREFIX, key, token, 2048)
  if (claims === null || Array.isArray(claims) || typeof claims.sub !== 'string' || typeof claims.exp !== 'number') return null
  if (claims.app !== undefined && typeof claims.app !== 'string') return null
  if (claims.exp <= now) return null
  return { userId: claims.sub, expiresAt: claims.exp, appId: claims.app ?? null }
}


/**
 * The token key: `configured` (POSTBOX_TOKEN_SECRET) when set, else a secret generated once into
 * `<dataDir>/token-secret.txt` with mode 0600, so tokens survive restarts. The file appears whole
 * or not at all (written aside, fsynced, then linked into place, so two starts agree on one key);
 * one shorter than MIN_TOKEN_SECRET_LENGTH (emptied by a full disk, a crash or a placeholder) stops
 * the start instead of signing tokens anyone could forge.
 */
export function loadTokenKey(configured: string | null, dataDir: string): Buffer | string {
  if (configured) return configured
  const file = join(dataDir, 'token-secret.txt')
  mkdirSync(dataDir, { recursive: true })
  const existing = readKeyFile(file)
  if (existing !== null) return existing
  const secret = randomBytes(32).toString('base64url')
  const temp = `${file}.${randomBytes(8).toString('hex')}.tmp`
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, secret + '\n')
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temp, file)
  } catch (err) {
    // EEXIST: another start generated it first. Otherwise a file system without hard links:
    // create it in place instead (EEXIST there too means another start won).
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      try {
        writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' })
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      }
    }
  } finally {
    rmSync(temp, { force: true })
  }
  // Whoever won, every start uses what the file holds.
  return readKeyFile(file)!
}

/** The key in `file` (its mode narrowed to 0600), or null when there is no file. */
function readKeyFile(file: string): string | null {
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
  try {
    chmodSync(file, 0o600)
  } catch {
    // owned by someone else: not ours to narrow
  }
  if (text.length < MIN_TOKEN_SECRET_LENGTH) {
    throw new ConfigError(
      'POSTBOX_TOKEN_SECRET',
      `${file} holds fewer than ${MIN_TOKEN_SECRET_LENGTH} characters: delete it to generate a new key (every user token stops working) or set POSTBOX_TOKEN_SECRET`,
    )
  }
  return text
}
