import { type Page } from '../lib/cursor.js'
/** The roles of docs/api.md. */
export type KeyRole = 'admin' | 'publisher' | 'viewer' | 'consumer'

/** An API key row, mapped to camelCase. The key itself is never stored, only its hash. */
export interface ApiKeyRow {
  id: string
  name: string
  role: KeyRole
  /** The application a scoped key acts in; null for a key of every application. */
  appId: string | null
  hash: string
  prefix: string
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
}

/** The api_keys table: create, look up by hash, list, revoke. */
export interface KeysStore {
  insert(row: Omit<ApiKeyRow, 'lastUsedAt' | 'revokedAt' | 'appId'> & { appId?: string | null }): void
  get(id: string): ApiKeyRow | null
  byHash(hash: string): ApiKeyRow | null
  /** Marks a key revoked; false when it was unknown or already revoked. */
  revoke(id: string, now: number): boolean
  touch(id: string, now: number): void
  countActiveAdmins(): number
  list(opts: { limit: number; cursor?: string | null }): Page<ApiKeyRow>
}
