import { prepareAll, type Db } from './db.js'
import { type LeaseAcquired, type LockRow, type LocksStore } from '../locks.js'

const SQL = {
  get: `SELECT name, owner, acquired_at AS acquiredAt, seen_at AS expiresAt FROM locks WHERE name = ?`,
  take: `INSERT INTO locks (name, owner, acquired_at, seen_at) VALUES (@name, @owner, @now, @expiresAt)
    ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, seen_at = excluded.seen_at`,
  renew: `UPDATE locks SET seen_at = @expiresAt WHERE name = @name AND owner = @owner`,
  release: `DELETE FROM locks WHERE name = ? AND owner = ?`,
} as const

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
