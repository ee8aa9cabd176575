import { spawnSync } from 'node:child_process'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../log.js'
import { MAX_WAL_PAGES, startCheckpointer, type Checkpointer } from './checkpointer.js'
import { tempSqliteStore } from '../../../test/helpers.js'
import { ensureBuilt, ROOT } from '../../../test/support/server-process.js'

/**
 * The frames the WAL holds now and its salts, read from the file as SQLite does: the frames from the start whose
 * salts match the header's (a WAL started over gets new salts, so older frames past them are stale).
 */
const walState = (path: string): { frames: number; salt: string } => {
  const wal = readFileSync(path)
  if (wal.length < 32) return { frames: 0, salt: '' }
  const frameSize = wal.readUInt32BE(8) + 24
  let frames = 0
  for (let off = 32; off + frameSize <= wal.length && wal.compare(wal, 16, 24, off + 8, off + 16) === 0; off += frameSize) frames++
  return { frames, salt: wal.subarray(16, 24).toString('hex') }
}
/** Waits for `ok` (a state), polling; bounded only so a broken build fails instead of hanging (a loaded machine can take seconds to start a worker). */
const until = async (ok: () => boolean): Promise<void> => {
  const deadline = Date.now() + 20_000
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
}
const autocheckpoint = (db: { pragma(s: string, o: { simple: true }): unknown }): unknown => db.pragma('wal_autocheckpoint', { simple: true })

describe('background checkpointer', () => {
  let t: ReturnType<typeof tempSqliteStore>
  let c: Checkpointer | null = null
  afterEach(async () => {
    await c?.stop()
    c = null
    t.cleanup()
  })

  const write = (n: number): void =>
    t.store.tx(() => {
      for (let i = 0; i < n; i++) t.store.events.insert({ id: `evt_${i}_${Math.random()}`, clientId: null, type: 't', orderingKey: null, body: 'x'.repeat(500), createdAt: i })
    })

  it('copies the WAL into the database file while the writer checkpoints only past MAX_WAL_PAGES', async () => {
    t = tempSqliteStore()
    c = startCheckpointer(t.store, silentLogger(), { intervalMs: 20 })
    // The writer keeps its own checkpoints until the worker has opened the file.
    expect(autocheckpoint(t.store.db)).toBe(1000)
    await until(() => autocheckpoint(t.store.db) === MAX_WAL_PAGES)
    expect(autocheckpoint(t.store.db)).toBe(MAX_WAL_PAGES)
    const before = statSync(t.store.path).size
    write(12_000) // ~1,500 pages: more than one automatic checkpoint's worth
    await until(() => statSync(t.store.path).size > before + 5_000_000)
    expect(statSync(t.store.path).size).toBeGreaterThan(before + 5_000_000)
    expect(c.active()).toBe(true)
    await c.stop()
    expect(c.active()).toBe(false)
    expect(autocheckpoint(t.store.db)).toBe(1000)
  })

  it('keeps the WAL bounded under a steady stream of commits: the writer checkpoints past maxWalPages', async () => {
    t = tempSqliteStore()
    // The bound is the writer's own size check (its wal_autocheckpoint, moved to maxWalPages once
    // the worker is ready), not how often the worker happens to run: the worker is ready but never
    // ticks here, so no checkpoint competes with the writer's and nothing depends on scheduling.
    const maxWalPages = 250
    c = startCheckpointer(t.store, silentLogger(), { intervalMs: 3_600_000, maxWalPages })
    await until(() => autocheckpoint(t.store.db) === maxWalPages)
    expect(autocheckpoint(t.store.db)).toBe(maxWalPages)
    let largestCommit = 0
    let largest = 0
    let restarts = 0
    for (let i = 0; i < 40; i++) {
      const before = walState(`${t.store.path}-wal`)
      write(1500) // ~300–700 frames of WAL per commit (rows and scattered index pages)
      const after = walState(`${t.store.path}-wal`)
      // A WAL the previous commit left past maxWalPages was checkpointed whole by that commit
      // (no reader, no other checkpointer), so this commit started it over (new salts); one
      // within it was appended to.
      const restarted = after.salt !== before.salt
      expect(restarted).toBe(before.frames > maxWalPages)
      if (restarted) restarts++
      largestCommit = Math.max(largestCommit, restarted ? after.frames : after.frames - before.frames)
      largest = Math.max(largest, after.frames)
    }
    // 40 commits write ~20,000 frames; the WAL never holds more than maxWalPages plus one commit.
    expect(restarts).toBeGreaterThan(5)
    expect(largest).toBeLessThanOrEqual(maxWalPages + largestCommit)
  })

  it('gives checkpoints back to the writer when the worker cannot run', async () => {
    t = tempSqliteStore()
    const store = { ...t.store, path: `${t.store.path}.missing` }
    const warnings: unknown[] = []
    const log = { ...silentLogger(), warn: (o: unknown) => void warnings.push(o) } as ReturnType<typeof silentLogger>
    c = startCheckpointer(store, log, { intervalMs: 20 })
    await until(() => !c!.active())
    expect(c.active()).toBe(false)
    expect(autocheckpoint(t.store.db)).toBe(1000)
    expect(warnings).toHaveLength(1)
  })
})

describe('background checkpointer and process exit', () => {
  it('never keeps a process alive, even when nobody stops it', { timeout: 120_000 }, async () => {
    await ensureBuilt()
    const t = tempSqliteStore()
    try {
      const dist = (f: string): string => JSON.stringify(join(ROOT, 'dist', 'src', 'store', 'sqlite', f))
      const script = `
        const { openSqliteStore } = await import(${dist('index.js')})
        const { startCheckpointer } = await import(${dist('checkpointer.js')})
        const store = openSqliteStore(${JSON.stringify(t.store.path)})
        let warned = false
        const c = startCheckpointer(store, { warn() { warned = true }, debug() {} })
        store.events.insert({ id: 'evt_exit', clientId: null, type: 't', orderingKey: null, body: '{}', createdAt: 0 })
        // The compiled worker module (dist/src/store/sqlite/checkpoint-worker.js) ran: still active.
        setTimeout(() => console.log(c.active() && !warned ? 'done' : 'worker failed'), 300)
      `
      // A file, not -e: an -e script exits even with a referenced worker port.
      const file = join(t.dir, 'exit-check.mjs')
      writeFileSync(file, script)
      const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 10_000 })
      expect(r.error).toBeUndefined()
      expect(r.stdout.trim()).toBe('done')
      expect(r.status).toBe(0)
    } finally {
      t.cleanup()
    }
  })
})
