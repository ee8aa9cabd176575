import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { newId } from '../lib/ids.js'
import type { Store } from '../store/index.js'
import type { ApiKeyRow, KeyRole } from '../store/keys.js'

/** The prefix every API key starts with. */
export const KEY_PREFIX = 'pbk_'
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
    app_id: row.appId,
    prefix: row.prefix,
    created_at: new Date(row.createdAt).toISOString(),
    last_used_at: row.lastUsedAt === null ? null : new Date(row.lastUsedAt).toISOString(),
    revoked: row.revokedAt !== null,
    revoked_at: row.revokedAt === null ? null : new Date(row.revokedAt).toISOString(),
  }
}

/**
 * Stores a new key (generated unless given) and returns its row and the plaintext, shown once.
 * With `appId` the key acts only inside that application (a scoped key, docs/applications.md).
 * Inside a transaction, pass the transaction's store.
 */
export async function createApiKey(store: Store, input: { name: string; role: KeyRole; key?: string; appId?: string | null }, now: number): Promise<{ row: ApiKeyRow; key: string }> {
  const key = input.key ?? generateKey()
  const row: ApiKeyRow = {
    id: newId('key', now),
    name: input.name,
    role: input.role,
    appId: input.appId ?? null,
    hash: hashKey(key),
    prefix: key.slice(0, 12),
    createdAt: now,
    lastUsedAt: null,
    revokedAt: null,
  }
  await store.keys.insert(row)
  return { row, key }
}

/**
 * Verified keys are remembered for this long. Why: the lookup is a database read per request
 * (~5% of ingest CPU on SQLite, a round trip on PostgreSQL). A revoke through this process's API clears the cache at once; one made
 * by another process or node (`postbox keys revoke`) takes effect within this time.
 */
export const KEY_CACHE_MS = 1000
const KEY_CACHE_MAX = 10_000
const caches = new WeakMap<Store, Map<string, { row: ApiKeyRow; until: number }>>()
/** Bumped by every forget: a lookup that was reading while a revoke cleared the cache keeps its row out of it. */
const generations = new WeakMap<Store, number>()

/** Forgets every cached key verification for `store` (called after a revoke). */
export function forgetCachedKeys(store: Store): void {
  caches.get(store)?.clear()
  generations.set(store, (generations.get(store) ?? 0) + 1)
}

/**
 * Looks a presented key up by hash and confirms it in constant time; null when unknown or revoked.
 * `store` is the outer store (the cache and `forgetCachedKeys` are keyed by it).
 */
export async function verifyKey(store: Store, presented: string, now = Date.now()): Promise<ApiKeyRow | null> {
  if (!KEY_SHAPE.test(presented)) return null
  const hash = hashKey(presented)
  let cache = caches.get(store)
  if (!cache) caches.set(store, (cache = new Map()))
  const hit = cache.get(hash)
  let row: ApiKeyRow | null
  if (hit && hit.until > now) row = hit.row
  else {
    const generation = generations.get(store) ?? 0
    row = await store.keys.byHash(hash)
    if (cache.size >= KEY_CACHE_MAX) cache.clear()
    if (row && row.revokedAt === null && generation === (generations.get(store) ?? 0)) cache.set(hash, { row, until: now + KEY_CACHE_MS })
    else cache.delete(hash)
  }
  if (!row || row.revokedAt !== null) return null
  const a = Buffer.from(row.hash, 'hex')
  const b = Buffer.from(hash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b) ? row : null
}
