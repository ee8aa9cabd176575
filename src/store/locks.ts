import { prepareAll, type Db } from './db.js'

/** A row of the `locks` table: who holds `name`, since when, and the holder's last heartbeat. */
export interface LockRow {
  name: string
  owner: string
  acquiredAt: number
  seenAt: number
}

const SQL = {
  get: `SELECT name, owner, acquired_at AS acquiredAt, seen_at AS seenAt FROM locks WHERE name = ?`,
  take: `INSERT INTO locks (name, owner, acquired_at, seen_at) VALUES (@name, @owner, @now, @now)
    ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, seen_at = excluded.seen_at`,
  beat: `UPDATE locks SET seen_at = @now WHERE name = @name AND owner = @owner`,
  release: `DELETE FROM locks WHERE name = ? AND owner = ?`,
} as const

/** The `locks` table (schema v8): named locks held by one owner at a time. */
export interface LocksStore {
  /** The current holder of `name`, or null. */
  get(name: string): LockRow | null
  /**
   * Takes `name` for `owner` when it is free, already `owner`'s, or held by an owner that
   * `replaceable` says is gone; otherwise leaves it. Decided and written in one IMMEDIATE
   * transaction, so two processes never both take it. The holder's heartbeat (`seen_at`) is
   * refreshed when it is `beatEveryMs` old. Returns the holder afterwards, and the owner it
   * replaced (null when none).
   */
  take(name: string, owner: string, now: number, replaceable: (holder: LockRow) => boolean, beatEveryMs: number): { holder: string; replaced: string | null }
  /** Releases `name` if `owner` holds it. */
  release(name: string, owner: string): void
  /** Writes `name` as `owner`'s, seen now, whoever had it (a standby's notice that it waits). */
  put(name: string, owner: string, now: number): void
}

/** Creates the locks store over `db`. */
export function createLocksStore(db: Db): LocksStore {
  const s = prepareAll(db, SQL)
  const get = (name: string): LockRow | null => (s.get.get(name) as LockRow | undefined) ?? null
  // With the row read: ours (heartbeat when due), someone else's that stays, or null to take it.
  const settled = (row: LockRow | null, name: string, owner: string, now: number, replaceable: (holder: LockRow) => boolean, beatEveryMs: number) => {
    if (row?.owner === owner) {
      // A clock that went back counts as due too, so the heartbeat never stays in the future.
      if (now - row.seenAt >= beatEveryMs || now < row.seenAt) s.beat.run({ name, owner, now })
      return { holder: owner, replaced: null }
    }
    if (row && !replaceable(row)) return { holder: row.owner, replaced: null }
    return null
  }
  const takeTx = db.transaction((name: string, owner: string, now: number, replaceable: (holder: LockRow) => boolean, beatEveryMs: number) => {
    const row = get(name)
    const kept = settled(row, name, owner, now, replaceable, beatEveryMs)
    if (kept) return kept
    s.take.run({ name, owner, now })
    return { holder: owner, replaced: row?.owner ?? null }
  })
  return {
    get,
    take(name, owner, now, replaceable, beatEveryMs) {
      // Reading first keeps the common cases (already ours; held by a live process) free of
      // the write lock: a standby process asks every poll.
      return settled(get(name), name, owner, now, replaceable, beatEveryMs) ?? takeTx.immediate(name, owner, now, replaceable, beatEveryMs)
    },
    release(name, owner) {
      s.release.run(name, owner)
    },
    put(name, owner, now) {
      s.take.run({ name, owner, now })
    },
  }
}
