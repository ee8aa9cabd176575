/**
 * Store benchmark: enqueue (one row per commit, and 1,000 rows per commit) and claim+settle,
 * next to a bare better-sqlite3 INSERT loop into the same deliveries table, in the same run,
 * with the same pragmas (openStore → openDatabase). The bare loop is the ceiling: it skips id
 * generation, parameter mapping, dedup handling and the asynchronous Store's transactions and promises.
 *
 * Rows look like webhook deliveries: an endpoint and an event (both real rows, so the foreign
 * key checks run), a 30-character id, unique per event + endpoint. The box is shared,
 * so each figure is the best of ROUNDS interleaved rounds, each on fresh database files.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, type Store } from '../src/store/index.js'
import type { Db } from '../src/store/sqlite/db.js'
import type { SettleInput } from '../src/store/deliveries.js'

const ROUNDS = 3
const SINGLE_ROWS = 10_000
const BATCH_ROWS = 100_000
const BATCH = 1_000
const CLAIM_BATCH = 256
const NOW = Date.UTC(2026, 0, 1)
const ENDPOINT = 'ep_01kdx000000000000000000000'

const SETUP = {
  endpoint: `INSERT INTO endpoints (id, url, secret, created_at, updated_at) VALUES ('${ENDPOINT}', 'https://example.com', 's', 0, 0)`,
  event: `INSERT INTO events (id, type, body, created_at) VALUES (?, 'bench.event', '{}', ${NOW})`,
}
const BARE_INSERT = `INSERT INTO deliveries (id, channel, event_id, endpoint_id, event_type,
    status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
  VALUES (?, 'webhook', ?, '${ENDPOINT}', 'bench.event', 'pending', 0, 8, ?, ?, ?)`

const eventId = (i: number): string => `evt_01kdx${i.toString().padStart(21, '0')}`
const bareId = (i: number): string => `dlv_01kdx${i.toString().padStart(21, '0')}`
const rate = (rows: number, ms: number): number => Math.round((rows / ms) * 1000)

/** Wall and process CPU milliseconds since `start()`; CPU time is steadier on a shared box. */
function stopwatch(): () => { wall: number; cpu: number } {
  const w = performance.now()
  const c = process.cpuUsage()
  return () => {
    const d = process.cpuUsage(c)
    return { wall: performance.now() - w, cpu: (d.user + d.system) / 1000 }
  }
}
const fmt = (n: number): string => n.toLocaleString('en-US')

/** A fresh store with one endpoint and `n` events (setup, not measured). */
function freshStore(dir: string, name: string, n: number): Store {
  const store = openStore(join(dir, `${name}.db`))
  const db: Db = store.sqlite!.db
  db.prepare(SETUP.endpoint).run()
  const ev = db.prepare(SETUP.event)
  db.transaction(() => {
    for (let i = 0; i < n; i++) ev.run(eventId(i))
  })()
  return store
}

/** rows/s for one measure: by wall clock, and by this process's CPU time. */
interface Rate {
  wall: number
  cpu: number
}

interface Figures {
  bareSingle: Rate
  bareBatched: Rate
  single: Rate
  batched: Rate
  claimSettle: Rate
  claimOnly: Rate
}

async function measure(rows: number, fn: () => void | Promise<void>): Promise<Rate> {
  const stop = stopwatch()
  await fn()
  const t = stop()
  return { wall: rate(rows, t.wall), cpu: rate(rows, t.cpu) }
}

async function round(dir: string, r: number): Promise<Figures> {
  const total = SINGLE_ROWS + BATCH_ROWS
  // Bare ceiling: a prepared INSERT, BEGIN IMMEDIATE / COMMIT by hand.
  const bareStore = freshStore(dir, `bare${r}`, total)
  const db: Db = bareStore.sqlite!.db
  const insert = db.prepare(BARE_INSERT)
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const bareRow = (i: number): void => void insert.run(bareId(i), eventId(i), NOW, NOW, NOW)
  const bareSingle = await measure(SINGLE_ROWS, () => {
    for (let i = 0; i < SINGLE_ROWS; i++) {
      begin.run()
      bareRow(i)
      commit.run()
    }
  })
  const many = db.transaction((from: number) => {
    for (let i = from; i < from + BATCH; i++) bareRow(i)
  })
  const bareBatched = await measure(BATCH_ROWS, () => {
    for (let i = SINGLE_ROWS; i < total; i += BATCH) many.immediate(i)
  })
  await bareStore.close()

  // Postbox: store.tx + deliveries.enqueue, then claimDue + settle until the queue is empty.
  const store = freshStore(dir, `postbox${r}`, total)
  const row = (i: number) => ({
    channel: 'webhook' as const,
    eventId: eventId(i),
    endpointId: ENDPOINT,
    eventType: 'bench.event',
    maxAttempts: 8,
    nextAttemptAt: NOW,
  })
  const single = await measure(SINGLE_ROWS, async () => {
    for (let i = 0; i < SINGLE_ROWS; i++) await store.tx((s) => s.deliveries.enqueue(row(i), NOW))
  })
  const batched = await measure(BATCH_ROWS, async () => {
    for (let i = SINGLE_ROWS; i < total; i += BATCH) {
      await store.tx(async (s) => {
        for (let j = i; j < i + BATCH; j++) await s.deliveries.enqueue(row(j), NOW)
      })
    }
  })

  let claimWall = 0
  let claimCpu = 0
  let done = 0
  const claimSettle = await measure(total, async () => {
    for (;;) {
      const stop = stopwatch()
      const claimed = await store.deliveries.claimDue({ limit: CLAIM_BATCH, now: NOW, defaultTimeoutMs: 15_000 })
      const t = stop()
      claimWall += t.wall
      claimCpu += t.cpu
      if (claimed.length === 0) break
      const results: SettleInput[] = claimed.map((d) => ({
        id: d.id,
        claimToken: d.claimToken,
        outcome: { kind: 'success' },
        attempt: { startedAt: NOW, durationMs: 12, statusCode: 200, responseBody: 'ok' },
      }))
      await store.deliveries.settle(results, NOW)
      done += claimed.length
    }
  })
  if (done !== total) throw new Error(`claimed ${done} of ${total} rows`)
  await store.close()
  const claimOnly = { wall: rate(done, claimWall), cpu: rate(done, claimCpu) }
  return { bareSingle, bareBatched, single, batched, claimSettle, claimOnly }
}

const BACKLOG = 100_000
const CLAIMS = 200
const OTHER = 'ep_01kdx000000000000000000001'

/**
 * ms per claim of 10 due rows of one endpoint, with `backlog` older due rows of another endpoint
 * that has no free slot (docs/delivery.md isolation: the backlog must not make the claim slower).
 */
async function claimBehindBacklog(dir: string, backlog: number, name: string): Promise<number> {
  const store = freshStore(dir, name, backlog + CLAIMS * 10)
  store.sqlite!.db.prepare(SETUP.endpoint.replace(ENDPOINT, OTHER)).run()
  const row = (i: number, endpointId: string, at: number) => ({ channel: 'webhook' as const, eventId: eventId(i), endpointId, eventType: 'bench.event', maxAttempts: 8, nextAttemptAt: at })
  for (let i = 0; i < backlog; i += BATCH) {
    await store.tx(async (s) => {
      for (let j = i; j < Math.min(i + BATCH, backlog); j++) await s.deliveries.enqueue(row(j, ENDPOINT, NOW - 1), NOW)
    })
  }
  let ms = 0
  for (let c = 0; c < CLAIMS; c++) {
    await store.tx(async (s) => {
      for (let j = 0; j < 10; j++) await s.deliveries.enqueue(row(backlog + c * 10 + j, OTHER, NOW), NOW)
    })
    const t0 = performance.now()
    const claimed = await store.deliveries.claimDue({ limit: 64, now: NOW, defaultTimeoutMs: 15_000, capacity: (id) => (id === ENDPOINT ? 0 : 64), excludeEndpoints: [ENDPOINT] })
    ms += performance.now() - t0
    if (claimed.length !== 10) throw new Error(`claimed ${claimed.length} of 10`)
    await store.deliveries.settle(claimed.map((d) => ({ id: d.id, claimToken: d.claimToken, outcome: { kind: 'success' } })), NOW)
  }
  await store.close()
  return ms / CLAIMS
}

/** Runs the store benchmark and prints rows/s with the ratio to the bare loop. */
export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-'))
  try {
    const rounds: Figures[] = []
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round(dir, r))
    const best = (k: keyof Figures, by: keyof Rate): number => Math.max(...rounds.map((f) => f[k][by]))
    const lines: [string, keyof Figures, keyof Figures | null][] = [
      ['enqueue, 1 row per commit', 'single', 'bareSingle'],
      [`enqueue, ${fmt(BATCH)} rows per commit`, 'batched', 'bareBatched'],
      [`claim (${CLAIM_BATCH}/batch) + settle success`, 'claimSettle', 'bareBatched'],
      ['  of which claim alone', 'claimOnly', null],
    ]
    console.log(`rows: ${fmt(SINGLE_ROWS)} single + ${fmt(BATCH_ROWS)} batched per round; best of ${ROUNDS} rounds; file database, WAL, synchronous=NORMAL; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} CPUs`)
    console.log('| measure | postbox rows/s (wall) | bare rows/s (wall) | ratio | postbox rows/CPU-s | bare rows/CPU-s | ratio |')
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for (const [name, ours, base] of lines) {
      const cells = (['wall', 'cpu'] as const).flatMap((by) => {
        const o = best(ours, by)
        if (base === null) return [fmt(o), '', '']
        const b = best(base, by)
        return [fmt(o), fmt(b), (o / b).toFixed(2)]
      })
      console.log(`| ${name} | ${cells.join(' | ')} |`)
    }
    const empty = Math.min(await claimBehindBacklog(dir, 0, 'empty1'), await claimBehindBacklog(dir, 0, 'empty2'))
    const behind = Math.min(await claimBehindBacklog(dir, BACKLOG, 'backlog1'), await claimBehindBacklog(dir, BACKLOG, 'backlog2'))
    console.log(`claim of 10 rows behind ${fmt(BACKLOG)} due rows of a saturated endpoint: ${behind.toFixed(3)} ms; with no backlog: ${empty.toFixed(3)} ms; ratio ${(behind / empty).toFixed(1)} (best of 2, ${CLAIMS} claims each)`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
