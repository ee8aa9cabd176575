import { existsSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { BackupTargetError, backupDatabase } from './backup.js'
import { openDatabase, schemaVersion } from './db.js'
import { SCHEMA_VERSION } from '../schema.js'
import { MIGRATIONS } from './migrations.js'
import { openTestQueue, row, type TestQueue } from '../../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)

let q: TestQueue
beforeEach(() => {
  q = openTestQueue()
})
afterEach(() => q.cleanup())

function fill(from: number, n: number): void {
  q.db.transaction(() => {
    for (let i = from; i < from + n; i++) q.deliveries.enqueue(row(`r${i}`, NOW, { payload: 'p'.repeat(500) }), NOW)
  })()
}

describe('backupDatabase', () => {
  it('copies a consistent database while writes continue, and the copy opens with the rows', async () => {
    fill(0, 3_000)
    const target = join(dirname(q.path), 'backup.db')
    let writes = 0
    let running = true
    const writer = (async () => {
      while (running) {
        fill(100_000 + writes, 1)
        writes++
        await new Promise<void>((resolve) => setImmediate(resolve))
      }
    })()
    const { pages } = await backupDatabase(q, target, { pagesPerStep: 20 })
    expect(statSync(target).mode & 0o077).toBe(0)
    running = false
    await writer
    expect(pages).toBeGreaterThan(100)
    expect(writes).toBeGreaterThan(0)

    const copy = openDatabase(target, { readonly: true })
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok')
      expect(schemaVersion(copy)).toBe(SCHEMA_VERSION)
      const n = copy.prepare('SELECT count(*) FROM deliveries').pluck().get() as number
      expect(n).toBeGreaterThanOrEqual(3_000)
      expect(n).toBeLessThanOrEqual(3_000 + writes)
    } finally {
      copy.close()
    }
    expect(readdirSync(dirname(target)).filter((f) => f.endsWith('.tmp'))).toEqual([])
  })

  it('replaces an existing file only when the copy is complete, and leaves nothing on failure', async () => {
    fill(0, 10)
    const dir = dirname(q.path)
    const target = join(dir, 'existing.db')
    writeFileSync(target, 'old backup')
    await backupDatabase(q, target)
    const copy = openDatabase(target, { readonly: true })
    expect(copy.prepare('SELECT count(*) FROM deliveries').pluck().get()).toBe(10)
    copy.close()

    const missingDir = join(dir, 'no-such-dir', 'b.db')
    const err: unknown = await backupDatabase(q, missingDir).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BackupTargetError)
    expect((err as Error).message).toBe(`backup target directory ${join(dir, 'no-such-dir')} does not exist; create it first`)
    expect(existsSync(missingDir)).toBe(false)
    await expect(backupDatabase(q, join(target, 'b.db'))).rejects.toThrow(/is not a directory/)
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([])
  })

  it('removes temporary files of killed backups of the same target, not those of live ones', async () => {
    fill(0, 5)
    const dir = dirname(q.path)
    const target = join(dir, 'nightly.db')
    const deadPid = 2 ** 22 + 12345 // above Linux's pid_max, so no such process
    const stale = join(dir, `.nightly.db.${deadPid}.0badc0de.tmp`)
    const live = join(dir, `.nightly.db.${process.pid}.00c0ffee.tmp`)
    const other = join(dir, `.other.db.${deadPid}.0badc0de.tmp`)
    for (const f of [stale, live, other]) writeFileSync(f, 'partial')
    await backupDatabase(q, target)
    expect([existsSync(stale), existsSync(live), existsSync(other), existsSync(target)]).toEqual([false, true, true, true])
  })

  it('refuses the live database and its companion files as a target, also through a symlinked directory', async () => {
    fill(0, 10)
    const link = join(dirname(dirname(q.path)), `link-${process.pid}-${Date.now()}`)
    symlinkSync(dirname(q.path), link)
    try {
      for (const target of [q.path, `${q.path}-wal`, `${q.path}-shm`, join(link, basename(q.path))]) {
        await expect(backupDatabase(q, target)).rejects.toThrow(BackupTargetError)
      }
    } finally {
      rmSync(link, { force: true })
    }
    // The database is untouched and still takes writes.
    fill(10, 1)
    expect(q.db.prepare('SELECT count(*) FROM deliveries').pluck().get()).toBe(11)
  })

  it('copies an older schema as it is, without upgrading the source or the copy', async () => {
    const dir = dirname(q.path)
    const source = join(dir, 'old.db')
    const raw = new Database(source)
    raw.pragma('journal_mode = WAL')
    for (const step of MIGRATIONS.slice(0, SCHEMA_VERSION - 1)) raw.exec(step)
    raw.pragma(`user_version = ${SCHEMA_VERSION - 1}`)
    raw.exec(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_1', 't', '{}', 1)`)
    raw.close()
    const db = openDatabase(source, { readonly: true, schema: 'any' })
    try {
      await backupDatabase({ db }, join(dir, 'old-copy.db'))
      expect(schemaVersion(db)).toBe(SCHEMA_VERSION - 1)
    } finally {
      db.close()
    }
    const copy = new Database(join(dir, 'old-copy.db'), { readonly: true })
    try {
      expect(schemaVersion(copy)).toBe(SCHEMA_VERSION - 1)
      expect(copy.prepare('SELECT id FROM events').pluck().all()).toEqual(['evt_1'])
    } finally {
      copy.close()
    }
    const again = new Database(source, { readonly: true })
    expect(schemaVersion(again)).toBe(SCHEMA_VERSION - 1)
    again.close()
  })
})
