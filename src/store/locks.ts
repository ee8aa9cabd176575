import { prepareAll, type Db } from './db.js'

/** A row of the `locks` table: who holds `name`, and since when. */
export interface LockRow {
  name: string
  owner: string
  acquiredAt: number
}

const SQL = {
  get: `SELECT name, owner, acquired_at AS acquiredAt FROM locks WHERE name = ?`,
  take: `INSERT INTO locks (name, owner, acquired_at) VALUES (@name, @owner, @now)
    ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at`,
  release: `DELETE FROM locks WHERE name = ? AND owner = ?`,
} as const

/** The `locks` table (schema v8): named locks held by one owner at a time. */
export interface LocksStore {
  /** The current holder of `name`, or null. */
  get(name: string): LockRow | null
  /**
   * Takes `name` for `owner` when it is free, already `owner`'s, or held by an owner that
   * `replaceable` says is gone; otherwise leaves it. Decided and written in one IMMEDIATE
   * transaction, so two processes never both take it. Returns the holder afterwards, and the
   * owner it replaced (null when none).
   */
  take(name: string, owner: string, now: number, replaceable: (holder: string) => boolean): { holder: string; replaced: string | null }
  /** Releases `name` if `owner` holds it. */
  release(name: string, owner: string): void
}

/** Creates the locks store over `db`. */
export function createLocksStore(db: Db): LocksStore {
  const s = prepareAll(db, SQL)
  const get = (name: string): LockRow | null => (s.get.get(name) as LockRow | undefined) ?? null
  const decide = (name: string, owner: string, now: number, replaceable: (holder: string) => boolean) => {
    const row = get(name)
    if (row?.owner === owner) return { holder: owner, replaced: null }
    if (row && !replaceable(row.owner)) return { holder: row.owner, replaced: null }
    s.take.run({ name, owner, now })
    return { holder: owner, replaced: row?.owner ?? null }
  }
  const takeTx = db.transaction(decide)
  return {
    get,
    take(name, owner, now, replaceable) {
      // Reading first keeps the common cases (already ours; held by a live process) free of
      // the write lock: a standby process asks on every poll.
      const row = get(name)
      if (row?.owner === owner) return { holder: owner, replaced: null }
      if (row && !replaceable(row.owner)) return { holder: row.owner, replaced: null }
      return takeTx.immediate(name, owner, now, replaceable)
    },
    release(name, owner) {
      s.release.run(name, owner)
    },
  }
}
