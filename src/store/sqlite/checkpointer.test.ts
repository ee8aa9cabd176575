import { spawnSync } from 'node:child_process'
import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../log.js'
import { MAX_WAL_PAGES, startCheckpointer, type Checkpointer } from './checkpointer.js'
import { tempSqliteStore } from '../../../test/helpers.js'
import { ensureBuilt, ROOT } from '../../../test/support/server-process.js'

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
    for (let i = 0; i < 500 && autocheckpoint(t.store.db) !== MAX_WAL_PAGES; i++) await new Promise((r) => setTimeout(r, 10))
    expect(autocheckpoint(t.store.db)).toBe(MAX_WAL_PAGES)
    const before = statSync(t.store.path).size
    write(12_000) // ~1,500 pages: more than one automatic checkpoint's worth
    const deadline = Date.now() + 5000
    while (statSync(t.store.path).size < before + 5_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(statSync(t.store.path).size).toBeGreaterThan(before + 5_000_000)
    expect(c.active()).toBe(true)
    await c.stop()
    expect(c.active()).toBe(false)
    expect(autocheckpoint(t.store.db)).toBe(1000)
  })

  it('keeps the WAL bounded under a steady stream of commits', async () => {
    t = tempSqliteStore()
    c = startCheckpointer(t.store, silentLogger(), { intervalMs: 10, maxWalPages: 250 })
    let largest = 0
    for (let i = 0; i < 40; i++) {
      write(1500) // ~2.4 MB of WAL per commit (rows and index pages)
      largest = Math.max(largest, statSync(`${t.store.path}-wal`).size)
      await new Promise((r) => setTimeout(r, 5))
    }
    // 40 commits write ~95 MB of WAL. Without the writer finishing a checkpoint now and then the
    // WAL never starts over and holds all of it; with it, a few commits' worth (7–11 MB seen).
    expect(largest).toBeLessThan(40_000_000)
  })

  it('gives checkpoints back to the writer when the worker cannot run', async () => {
    t = tempSqliteStore()
    const store = { ...t.store, path: `${t.store.path}.missing` }
    const warnings: unknown[] = []
    const log = { ...silentLogger(), warn: (o: unknown) => void warnings.push(o) } as ReturnType<typeof silentLogger>
    c = startCheckpointer(store, log, { intervalMs: 20 })
    const deadline = Date.now() + 5000
    while (c.active() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
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
      const dist = (f: string): string => JSON.stringify(join(ROOT, 'dist', 'src', 'store', f))
      const script = `
        const { openSqliteStore } = await import(${dist('index.js')})
        const { startCheckpointer } = await import(${dist('checkpointer.js')})
        const store = openSqliteStore(${JSON.stringify(t.store.path)})
        let warned = false
        const c = startCheckpointer(store, { warn() { warned = true }, debug() {} })
        store.events.insert({ id: 'evt_exit', clientId: null, type: 't', orderingKey: null, body: '{}', createdAt: 0 })
        // The compiled worker module (dist/src/store/checkpoint-worker.js) ran: still active.
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
