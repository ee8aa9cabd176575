import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { rmSync, symlinkSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { testConfig } from '../config.js'
import { systemClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import { openStore, type Store } from '../store/index.js'
import { tempStore } from '../../test/helpers.js'
import { insertEndpoint } from '../../test/queue-helpers.js'
import type { ChannelSender } from './channel.js'
import { createDispatcher, type Dispatcher } from './dispatcher.js'
import type { Lock } from './lock.js'
import { createStoreLock, LOCK_BEAT_MS, LOCK_STALE_MS, lockHolderGone } from './store-lock.js'
import { ManualClock } from '../lib/clock.js'
import { CLAIM_OWNER, processStart } from './claim-owner.js'

const stops: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop()
})

function temp(): Store {
  const t = tempStore()
  stops.push(t.cleanup)
  return t.store
}

const waitFor = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5))
  if (!cond()) throw new Error('timed out')
}

const enqueue = (store: Store, tag: string): string =>
  store.tx(() => store.deliveries.enqueue({ channel: 'inbox', notificationId: `ntf_${tag}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())).id

/** A dispatcher on `store` whose inbox sends are recorded in `sent`. */
function dispatcherOn(store: Store, sent: string[], lock?: Lock): Dispatcher {
  const sender: ChannelSender = { send: async (row) => (sent.push(row.id), { outcome: { kind: 'success' } }) }
  const d = createDispatcher({
    store, config: testConfig({ concurrency: 8, pollIntervalMs: 20 }), clock: systemClock, rng: () => 0.5,
    log: silentLogger(), channels: new Map([['inbox', sender]]), ...(lock ? { lock } : {}),
  })
  stops.push(() => d.stop(50))
  return d
}

describe('the dispatcher lock', () => {
  it('is held by one owner at a time; a live holder keeps it, a gone one is replaced', async () => {
    const store = temp()
    const gone = new Set<string>()
    const lockOf = (owner: string): Lock => createStoreLock(store, { owner, isGone: (h) => gone.has(h.owner) })
    const a = lockOf('1.1.')
    const b = lockOf('2.2.')
    expect(await a.acquire('deliveries')).toBe(true)
    expect(await a.acquire('deliveries')).toBe(true)
    expect(await b.acquire('deliveries')).toBe(false)
    expect(store.locks.get('deliveries')?.owner).toBe('1.1.')
    // Releasing a lock one does not hold changes nothing.
    await b.release('deliveries')
    expect(store.locks.get('deliveries')?.owner).toBe('1.1.')
    await a.release('deliveries')
    expect(store.locks.get('deliveries')).toBeNull()
    expect(await b.acquire('deliveries')).toBe(true)
    expect(await a.acquire('deliveries')).toBe(false)
    gone.add('2.2.')
    expect(await a.acquire('deliveries')).toBe(true)
    expect(store.locks.get('deliveries')?.owner).toBe('1.1.')
  })

  it('judges a holder in this PID namespace by its PID, one in another namespace (or naming none) by its heartbeat while this one waited', () => {
    const row = (owner: string, seenAt = 0) => ({ name: 'deliveries', owner, acquiredAt: 0, seenAt })
    const ns = /\.n(\d+)\.$/.exec(CLAIM_OWNER)![1]!
    const parent = `${process.ppid}.${processStart(process.ppid)}.n${ns}.`
    const gone = `${spawnSync(process.execPath, ['-e', '']).pid}.1.n${ns}.`
    const long = 2 * LOCK_STALE_MS
    expect(lockHolderGone(row(parent), long, long)).toBe(false)
    expect(lockHolderGone(row(gone), 0, 0)).toBe(true)
    // Another namespace (another container on the volume, or this one before a restart): PID 1
    // there may be anything here, so only a heartbeat that stopped while this one waited counts.
    const elsewhere = `1.5.n${ns}9.`
    expect(lockHolderGone(row(elsewhere), LOCK_STALE_MS, long)).toBe(false)
    expect(lockHolderGone(row(elsewhere), LOCK_STALE_MS + 1, long)).toBe(true)
    // An unchanged heartbeat means nothing until this process has waited (and said so) as long:
    // a holder alone on its file writes no heartbeat.
    expect(lockHolderGone(row(elsewhere), long, LOCK_STALE_MS)).toBe(false)
    expect(lockHolderGone(row(`${process.pid}.1.n${ns}9.`), 0, long)).toBe(false)
    // An owner that names no namespace (an earlier build) cannot be checked by PID either.
    expect(lockHolderGone(row(`${process.pid}.1.`), 0, 0)).toBe(false)
    expect(lockHolderGone(row(`${process.pid}.1.`), LOCK_STALE_MS + 1, LOCK_STALE_MS + 1)).toBe(true)
  })

  it('a wall-clock step does not make a beating holder look gone: staleness is measured on the standby\'s monotonic clock', async () => {
    const store = temp()
    const wall = new ManualClock(1_000_000)
    let mono = 0
    const holder = createStoreLock(store, { owner: '1.1.n1.', isGone: () => false, clock: wall })
    const standby = createStoreLock(store, { owner: '2.2.n2.', clock: wall, monotonic: () => mono })
    expect(await holder.acquire('deliveries')).toBe(true)
    for (let i = 0; i < 60; i++) {
      wall.advance(1000)
      mono += 1000
      expect(await standby.acquire('deliveries')).toBe(false)
      expect(await holder.acquire('deliveries')).toBe(true)
    }
    // The standby has seen the latest beat; then the wall clock jumps 40 s ahead while one second
    // passes for the standby.
    expect(await standby.acquire('deliveries')).toBe(false)
    wall.advance(40_000)
    mono += 1000
    expect(await standby.acquire('deliveries')).toBe(false)
    expect(await holder.acquire('deliveries')).toBe(true)
    expect(store.locks.get('deliveries')!.owner).toBe('1.1.n1.')
  })

  it('a holder alone writes no heartbeat; once a standby waits, it renews one every LOCK_BEAT_MS', async () => {
    const store = temp()
    const clock = new ManualClock(1_000_000)
    const lock = createStoreLock(store, { owner: '1.1.n1.', isGone: () => false, clock })
    const standby = createStoreLock(store, { owner: '2.2.n2.', clock, monotonic: () => clock.now() })
    expect(await lock.acquire('deliveries')).toBe(true)
    clock.advance(10 * LOCK_BEAT_MS)
    expect(await lock.acquire('deliveries')).toBe(true)
    expect(store.locks.get('deliveries')).toMatchObject({ acquiredAt: 1_000_000, seenAt: 1_000_000 })
    // Another namespace waits: it says so, and the holder starts beating at its next check.
    expect(await standby.acquire('deliveries')).toBe(false)
    expect(store.locks.get('deliveries:standby')).toMatchObject({ owner: '2.2.n2.' })
    clock.advance(1000)
    expect(await lock.acquire('deliveries')).toBe(true)
    const beat = clock.now()
    expect(store.locks.get('deliveries')!.seenAt).toBe(beat)
    clock.advance(LOCK_BEAT_MS - 1)
    expect(await lock.acquire('deliveries')).toBe(true)
    expect(store.locks.get('deliveries')!.seenAt).toBe(beat)
    clock.advance(1)
    expect(await lock.acquire('deliveries')).toBe(true)
    expect(store.locks.get('deliveries')!.seenAt).toBe(beat + LOCK_BEAT_MS)
    // A live, beating holder is never taken over; one whose beats stop is, after LOCK_STALE_MS.
    for (let i = 0; i < 40; i++) {
      clock.advance(1000)
      expect(await standby.acquire('deliveries')).toBe(false)
      expect(await lock.acquire('deliveries')).toBe(true)
    }
    const lastBeat = store.locks.get('deliveries')!.seenAt
    let took = false
    while (!took && clock.now() - lastBeat <= LOCK_STALE_MS + 5000) {
      clock.advance(1000)
      took = await standby.acquire('deliveries')
    }
    expect(took).toBe(true)
    // The standby measures from when it saw the last beat (up to one check after it).
    expect(clock.now() - lastBeat).toBeGreaterThan(LOCK_STALE_MS)
    expect(clock.now() - lastBeat).toBeLessThanOrEqual(LOCK_STALE_MS + LOCK_BEAT_MS + 1000)
    expect(store.locks.get('deliveries')).toMatchObject({ owner: '2.2.n2.' })
    expect(store.locks.get('deliveries:standby')).toBeNull()
    expect(await lock.acquire('deliveries')).toBe(false)
  })

  it('several dispatchers of one process share the lock: it is released only when the last one releases', async () => {
    const store = temp()
    const one = createStoreLock(store, { owner: '1.1.n1.', isGone: () => false })
    const two = createStoreLock(store, { owner: '1.1.n1.', isGone: () => false })
    const other = createStoreLock(store, { owner: '2.2.n1.', isGone: () => false })
    expect(await one.acquire('deliveries')).toBe(true)
    expect(await two.acquire('deliveries')).toBe(true)
    await one.release('deliveries')
    await one.release('deliveries')
    expect(await other.acquire('deliveries')).toBe(false)
    await two.release('deliveries')
    expect(await other.acquire('deliveries')).toBe(true)
  })

  it('counts the instances of one process per file, whatever path spelling opened it', async () => {
    const store = temp()
    const link = join(dirname(dirname(store.path)), `link-${Date.now()}`)
    symlinkSync(dirname(store.path), link)
    stops.push(() => rmSync(link, { force: true }))
    const viaLink = openStore(join(link, basename(store.path)))
    stops.push(() => viaLink.close())
    const one = createStoreLock(store, { owner: '1.1.n1.', isGone: () => false })
    const two = createStoreLock(viaLink, { owner: '1.1.n1.', isGone: () => false })
    expect(await one.acquire('deliveries')).toBe(true)
    expect(await two.acquire('deliveries')).toBe(true)
    await one.release('deliveries')
    expect(store.locks.get('deliveries')?.owner).toBe('1.1.n1.')
    await two.release('deliveries')
    expect(store.locks.get('deliveries')).toBeNull()
  })

  it('lets one of two processes on a file claim; the other stands by and takes over when the first stops', async () => {
    const store = temp()
    const other = openStore(store.path)
    stops.push(() => other.close())
    const sentA: string[] = []
    const sentB: string[] = []
    const a = dispatcherOn(store, sentA, createStoreLock(store, { owner: '1.1.', isGone: () => false }))
    const b = dispatcherOn(other, sentB, createStoreLock(other, { owner: '2.2.', isGone: () => false }))
    a.start()
    await waitFor(() => store.locks.get('deliveries') !== null)
    b.start()
    // Rows accepted by either process are claimed by the holder only.
    const rows = [enqueue(store, 'a1'), enqueue(other, 'b1'), enqueue(other, 'b2')]
    await waitFor(() => sentA.length === 3)
    await new Promise((r) => setTimeout(r, 60))
    expect(sentA.sort()).toEqual([...rows].sort())
    expect(sentB).toEqual([])
    await a.stop(50)
    expect(store.locks.get('deliveries')).toBeNull()
    const later = enqueue(other, 'b3')
    await waitFor(() => sentB.length === 1)
    expect(sentB).toEqual([later])
    expect(other.locks.get('deliveries')?.owner).toBe('2.2.')
    expect(sentA).toHaveLength(3)
  })

  it('hands over at stop without waiting for the drain, the rows still in flight counting against their limits', async () => {
    const store = temp()
    const other = openStore(store.path)
    stops.push(() => other.close())
    insertEndpoint(store.db, { id: 'ep_slow' })
    store.db.prepare(`UPDATE endpoints SET max_concurrency = 1 WHERE id = 'ep_slow'`).run()
    insertEndpoint(store.db, { id: 'ep_fast' })
    const add = (endpointId: string, tag: string): string =>
      store.tx(() => store.deliveries.enqueue({ channel: 'webhook', endpointId, notificationId: `ntf_${tag}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())).id
    let finish: () => void = () => {}
    const sentA: string[] = []
    const sentB: string[] = []
    const slow: ChannelSender = {
      send: async (row) => {
        sentA.push(row.id)
        await new Promise<void>((resolve) => (finish = resolve))
        return { outcome: { kind: 'success' } }
      },
    }
    const fast: ChannelSender = { send: async (row) => (sentB.push(row.id), { outcome: { kind: 'success' } }) }
    const config = testConfig({ concurrency: 8, pollIntervalMs: 20 })
    const deps = { config, clock: systemClock, rng: () => 0.5, log: silentLogger() }
    // The first holder runs as another (live) process would: its claims name the test's parent.
    const a = createDispatcher({ ...deps, store, channels: new Map([['webhook', slow]]), lock: createStoreLock(store, { owner: 'A', isGone: () => false }), claimOwner: `${process.ppid}.${processStart(process.ppid)}.` })
    const b = createDispatcher({ ...deps, store: other, channels: new Map([['webhook', fast]]), lock: createStoreLock(other, { owner: 'B', isGone: () => false }) })
    stops.push(() => a.stop(50), () => b.stop(50))
    const first = add('ep_slow', 's1')
    a.start()
    await waitFor(() => sentA.length === 1)
    b.start()
    const draining = a.stop(10_000)
    const second = add('ep_slow', 's2')
    const quick = add('ep_fast', 'f1')
    // The standby delivers at once, while the first holder still drains its slow request…
    await waitFor(() => sentB.includes(quick))
    await new Promise((r) => setTimeout(r, 100))
    // …but not to the endpoint whose one slot that request still holds.
    expect(sentB).not.toContain(second)
    expect(store.deliveries.get(first)!.status).toBe('in_flight')
    finish()
    await draining
    await waitFor(() => sentB.includes(second))
    expect(sentA).toEqual([first])
  })

  it('stops claiming when another process has taken the lock over', async () => {
    const store = temp()
    const sent: string[] = []
    const d = dispatcherOn(store, sent, createStoreLock(store, { owner: '1.1.', isGone: () => false }))
    d.start()
    await waitFor(() => store.locks.get('deliveries') !== null)
    // Another process judged this one gone and took the lock (a PID namespace it cannot see into).
    createStoreLock(store, { owner: '2.2.', isGone: () => true }).acquire('deliveries')
    await new Promise((r) => setTimeout(r, 60))
    enqueue(store, 'x')
    await new Promise((r) => setTimeout(r, 100))
    expect(sent).toEqual([])
    expect(store.deliveries.countByStatus().pending).toBe(1)
  })

  it('by default, stands by while another running process holds it, and takes over once that process is killed', async () => {
    const store = temp()
    // A real second process takes the lock as a Postbox would (owner `<pid>.<start>.`) and stays.
    const holder: ChildProcess = spawn(process.execPath, ['-e', `
      const Database = require('better-sqlite3')
      const db = new Database(${JSON.stringify(store.path)})
      db.pragma('busy_timeout = 5000')
      const s = require('node:fs').readFileSync('/proc/self/stat', 'utf8')
      const ns = /\\[(\\d+)\\]/.exec(require('node:fs').readlinkSync('/proc/self/ns/pid'))[1]
      const owner = process.pid + '.' + s.slice(s.lastIndexOf(')') + 2).split(' ')[19] + '.n' + ns + '.'
      db.prepare('INSERT INTO locks (name, owner, acquired_at, seen_at) VALUES (?, ?, ?, ?)').run('deliveries', owner, Date.now(), Date.now())
      process.stdout.write('ready')
      setInterval(() => {}, 1000)`], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] })
    stops.push(() => void holder.kill('SIGKILL'))
    await new Promise((r) => holder.stdout!.once('data', r))
    const sent: string[] = []
    const d = dispatcherOn(store, sent)
    d.start()
    const row = enqueue(store, 'r')
    await new Promise((r) => setTimeout(r, 100))
    expect(sent).toEqual([])
    expect(store.locks.get('deliveries')?.owner).toMatch(new RegExp(`^${holder.pid}\\.`))
    holder.kill('SIGKILL')
    await new Promise((r) => holder.once('exit', r))
    await waitFor(() => sent.length === 1)
    expect(sent).toEqual([row])
    expect(store.locks.get('deliveries')?.owner).toMatch(new RegExp(`^${process.pid}\\.`))
  })
})
