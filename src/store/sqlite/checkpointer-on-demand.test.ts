import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../log.js'
import { startCheckpointerOnDemand } from './checkpointer-on-demand.js'
import { MAX_WAL_PAGES, type Checkpointer } from './checkpointer.js'
import { tempSqliteStore } from '../../../test/helpers.js'

const autocheckpoint = (db: { pragma(s: string, o: { simple: true }): unknown }): unknown => db.pragma('wal_autocheckpoint', { simple: true })
/** Waits for `ok` (a state), polling; bounded only so a broken build fails instead of hanging (a loaded machine can take seconds to start a worker). */
const until = async (ok: () => boolean): Promise<void> => {
  const deadline = Date.now() + 20_000
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
}

describe('checkpointer on demand', () => {
  let t: ReturnType<typeof tempSqliteStore>
  let c: Checkpointer | null = null
  afterEach(async () => {
    await c?.stop()
    c = null
    t.cleanup()
  })

  const write = (n: number): void =>
    t.store.tx(() => {
      for (let i = 0; i < n; i++) t.store.events.insert({ id: `evt_${i}_${Math.random()}`, clientId: null, type: 't', orderingKey: null, body: 'x', createdAt: i })
    })

  it('leaves checkpoints to the writer while writes are few, and starts the worker once they are many', async () => {
    t = tempSqliteStore()
    c = startCheckpointerOnDemand(t.store, silentLogger(), { pollMs: 20, changes: 50, intervalMs: 20 })
    write(10)
    await new Promise((r) => setTimeout(r, 100))
    expect(c.active()).toBe(false)
    expect(autocheckpoint(t.store.db)).toBe(1000)
    write(60)
    await until(() => autocheckpoint(t.store.db) === MAX_WAL_PAGES)
    expect(c.active()).toBe(true)
    expect(autocheckpoint(t.store.db)).toBe(MAX_WAL_PAGES)
    await c.stop()
    expect(c.active()).toBe(false)
    expect(autocheckpoint(t.store.db)).toBe(1000)
  })

  it('stops cleanly when it never started', async () => {
    t = tempSqliteStore()
    c = startCheckpointerOnDemand(t.store, silentLogger(), { pollMs: 20 })
    await c.stop()
    expect(c.active()).toBe(false)
  })
})
