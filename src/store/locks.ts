import { prepareAll, type Db } from './db.js'

/**
 * A row of the `locks` table, read as a lease: who holds `name`, since when, and until when. The
 * expiry is the `seen_at` column (schema v8 named it for a heartbeat; a lease reuses it, so no
 * schema change): a row whose expiry has passed is free, whoever wrote it.
 */
export interface LockRow {
  name: string
  owner: string
  acquiredAt: number
  /** The lease's expiry (epoch ms); the holder renews it well before. */
  expiresAt: number
}

/** What `acquire` found and did. */
export interface LeaseAcquired {
  /** True when `owner` holds the lease now (taken or renewed). */
  held: boolean
  /** The row after the call. */
  holder: LockRow
  /** The owner whose expired lease was just replaced; null when none (free, ours, or not taken). */
  replaced: string | null
}

const SQL = {
  get: `SELECT name, owner, acquired_at AS acquiredAt, seen_at AS expiresAt FROM locks WHERE name = ?`,
  take: `INSERT INTO locks (name, owner, acquired_at, seen_at) VALUES (@name, @owner, @now, @expiresAt)
    ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, seen_at = excluded.seen_at`,
  renew: `UPDATE locks SET seen_at = @expiresAt WHERE name = @name AND owner = @owner`,
  release: `DELETE FROM locks WHERE name = ? AND owner = ?`,
} as const

/** The `locks` table: named leases, each held by one owner until it expires (docs/operations.md). */
export interface LocksStore {
  /** The current row of `name` (expired or not), or null. */
  get(name: string): LockRow | null
  /**
   * Takes `name` for `owner` until `now + ttlMs` when it is free or its lease expired (at or
   * before `now`), or renews it when `owner` holds it; leaves another owner's live lease alone.
   * Decided and written in one IMMEDIATE transaction, so two processes never both take it.
   */
  acquire(name: string, owner: string, now: number, ttlMs: number): LeaseAcquired
  /** Deletes `name` if `owner` holds it (a clean stop); true when it did. */
  release(name: string, owner: string): boolean
}

/** Creates the locks store over `db`. */
export function createLocksStore(db: Db): LocksStore {
  const s = prepareAll(db, SQL)
  const get = (name: string): LockRow | null => (s.get.get(name) as LockRow | undefined) ?? null
  const acquireTx = db.transaction((name: string, owner: string, now: number, ttlMs: number): LeaseAcquired => {
    const row = get(name)
    const expiresAt = now + ttlMs
    if (row?.owner === owner) {
      s.renew.run({ name, owner, expiresAt })
      return { held: true, holder: { ...row, expiresAt }, replaced: null }
    }
    if (row !== null && row.expiresAt > now) return { held: false, holder: row, replaced: null }
    s.take.run({ name, owner, now, expiresAt })
    return { held: true, holder: { name, owner, acquiredAt: now, expiresAt }, replaced: row?.owner ?? null }
  })
  return {
    get,
    acquire(name, owner, now, ttlMs) {
      // Reading first keeps a standby's checks (another owner's live lease) free of the write lock.
      const row = get(name)
      if (row !== null && row.owner !== owner && row.expiresAt > now) return { held: false, holder: row, replaced: null }
      return acquireTx.immediate(name, owner, now, ttlMs)
    },
    release(name, owner) {
      return s.release.run(name, owner).changes > 0
    },
  }
}
