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
