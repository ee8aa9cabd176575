import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { errors } from '../errors.js'
import { newId } from '../lib/ids.js'
import type { Store } from '../store/index.js'
import type { ApiKeyRow, KeyRole } from '../store/keys.js'
import type { ApiEnv } from './deps.js'

/** The prefix every API key starts with. */
export const KEY_PREFIX = 'pbk_'
/** last_used_at is written at most this often per key, so reads never become writes. */
const TOUCH_EVERY_MS = 60_000
const KEY_SHAPE = /^pbk_[A-Za-z0-9_-]{20,200}$/

/** Generates a new key: `pbk_` + 32 random bytes in base64url. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url')
}

/** Hex SHA-256 of a key: the only form the database holds. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex')
}

/** True when `key` has the shape of a Postbox key (used for POSTBOX_ADMIN_KEY). */
export function isKeyShaped(key: string): boolean {
  return KEY_SHAPE.test(key)
}

/** The public view of a key row (never the hash). */
export function keyJson(row: ApiKeyRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    prefix: row.prefix,
    created_at: new Date(row.createdAt).toISOString(),
    last_used_at: row.lastUsedAt === null ? null : new Date(row.lastUsedAt).toISOString(),
    revoked: row.revokedAt !== null,
    revoked_at: row.revokedAt === null ? null : new Date(row.revokedAt).toISOString(),
  }
}

/** Stores a new key (generated unless given) and returns its row and the plaintext, shown once. */
export function createApiKey(store: Store, input: { name: string; role: KeyRole; key?: string }, now: number): { row: ApiKeyRow; key: string } {
  const key = input.key ?? generateKey()
  const row: ApiKeyRow = {
    id: newId('key', now),
    name: input.name,
    role: input.role,
    hash: hashKey(key),
    prefix: key.slice(0, 12),
    createdAt: now,
    lastUsedAt: null,
    revokedAt: null,
  }
  store.keys.insert(row)
  return { row, key }
}

/**
 * Verified keys are remembered for this long. Why: the lookup is a SQLite read per request
 * (~5% of ingest CPU). A revoke through this process's API clears the cache at once; one made
 * by another process (`postbox keys revoke`) takes effect within this time.
 */
export const KEY_CACHE_MS = 1000
const KEY_CACHE_MAX = 10_000
const caches = new WeakMap<Store, Map<string, { row: ApiKeyRow; until: number }>>()

/** Forgets every cached key verification for `store` (called after a revoke). */
export function forgetCachedKeys(store: Store): void {
  caches.get(store)?.clear()
}

/** Looks a presented key up by hash and confirms it in constant time; null when unknown or revoked. */
export function verifyKey(store: Store, presented: string, now = Date.now()): ApiKeyRow | null {
  if (!KEY_SHAPE.test(presented)) return null
  const hash = hashKey(presented)
  let cache = caches.get(store)
  if (!cache) caches.set(store, (cache = new Map()))
  const hit = cache.get(hash)
  let row: ApiKeyRow | null
  if (hit && hit.until > now) row = hit.row
  else {
    row = store.keys.byHash(hash)
    if (cache.size >= KEY_CACHE_MAX) cache.clear()
    if (row && row.revokedAt === null) cache.set(hash, { row, until: now + KEY_CACHE_MS })
    else cache.delete(hash)
  }
  if (!row || row.revokedAt !== null) return null
  const a = Buffer.from(row.hash, 'hex')
  const b = Buffer.from(hash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b) ? row : null
}

/** Extracts the bearer token from an Authorization header; undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(header)
  return m ? m[1] : header.trim() === '' ? undefined : ''
}

/**
 * Authenticates `Authorization: Bearer pbk_…` and sets `c.var.apiKey`. 401 `unauthorized`
 * without credentials, 401 `invalid_token` for a malformed, unknown or revoked key.
 */
export function authenticate(): MiddlewareHandler<ApiEnv> {
  const touched = new Map<string, number>()
  return async (c, next) => {
    const { store, clock } = c.var.deps
    const token = bearerToken(c.req.header('authorization'))
    if (token === undefined) throw errors.unauthorized()
    const row = token === '' ? null : verifyKey(store, token)
    if (!row) throw errors.invalidToken()
    const now = clock.now()
    if ((touched.get(row.id) ?? 0) + TOUCH_EVERY_MS <= now) {
      touched.set(row.id, now)
      try {
        store.keys.touch(row.id, now)
      } catch {
        // last_used_at is best effort; a busy or full disk must not fail a read
      }
    }
    c.set('apiKey', { id: row.id, name: row.name, role: row.role })
    await next()
  }
}

/**
 * Route guard: `requireRole('viewer')` admits viewer and admin keys, `requireRole('publisher')`
 * publisher and admin keys, `requireRole('admin')` only admin keys; anything else is 403
 * `forbidden`. Use it as a route's `middleware` (createRoute) or in `app.use(path, …)`; the
 * global `authenticate()` has already run for every `/v1` path except `/v1/inbox`.
 */
export function requireRole(...roles: KeyRole[]): MiddlewareHandler<ApiEnv> {
  const allowed = new Set<KeyRole>(['admin', ...roles])
  return async (c, next) => {
    const key = c.get('apiKey')
    if (!key) throw errors.unauthorized()
    if (!allowed.has(key.role)) throw errors.forbidden()
    await next()
  }
}
