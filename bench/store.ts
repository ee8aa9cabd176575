/**
 * Store benchmark: enqueue (one row per commit, and 1,000 rows per commit) and claim+settle,
 * next to a bare better-sqlite3 INSERT loop into the same deliveries table, in the same run,
 * with the same pragmas (openStore → openDatabase). The bare loop is the ceiling: it skips id
 * generation, parameter mapping, dedup handling and the Store's transaction wrapper.
 *
 * Rows look like webhook deliveries: an endpoint and an event (both real rows, so the foreign
 * key checks run), a 30-character id and a dedup key of event + endpoint. The box is shared,
 * so each figure is the best of ROUNDS interleaved rounds, each on fresh database files.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, type Store } from '../src/store/index.js'
import type { Db } from '../src/store/db.js'
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
const BARE_INSERT = `INSERT INTO deliveries (id, channel, dedup_key, event_id, endpoint_id, event_type,
    status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
  VALUES (?, 'webhook', ?, ?, '${ENDPOINT}', 'bench.event', 'pending', 0, 8, ?, ?, ?)`

const eventId = (i: number): string => `evt_01kdx${i.toString().padStart(21, '0')}`
const bareId = (i: number): string => `dlv_01kdx${i.toString().padStart(21, '0')}`
const rate = (rows: number, ms: number): number => Math.round((rows / ms) * 1000)
const fmt = (n: number): string => n.toLocaleString('en-US')

/** A fresh store with one endpoint and `n` events (setup, not measured). */
function freshStore(dir: string, name: string, n: number): Store {
  const store = openStore(join(dir, `${name}.db`))
  const db: Db = store.db
  db.prepare(SETUP.endpoint).run()
  const ev = db.prepare(SETUP.event)
  db.transaction(() => {
    for (let i = 0; i < n; i++) ev.run(eventId(i))
  })()
  return store
}

interface Figures {
  bareSingle: number
  bareBatched: number
  single: number
  batched: number
  claimSettle: number
  claimOnly: number
}

function round(dir: string, r: number): Figures {
  const total = SINGLE_ROWS + BATCH_ROWS
  // Bare ceiling: a prepared INSERT, BEGIN IMMEDIATE / COMMIT by hand.
  const bareStore = freshStore(dir, `bare${r}`, total)
  const db: Db = bareStore.db
  const insert = db.prepare(BARE_INSERT)
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  let t = performance.now()
  for (let i = 0; i < SINGLE_ROWS; i++) {
    begin.run()
    insert.run(bareId(i), `${eventId(i)}:${ENDPOINT}`, eventId(i), NOW, NOW, NOW)
    commit.run()
  }
  const bareSingle = rate(SINGLE_ROWS, performance.now() - t)
  const many = db.transaction((from: number) => {
    for (let i = from; i < from + BATCH; i++) insert.run(bareId(i), `${eventId(i)}:${ENDPOINT}`, eventId(i), NOW, NOW, NOW)
  })
  t = performance.now()
  for (let i = SINGLE_ROWS; i < total; i += BATCH) many.immediate(i)
  const bareBatched = rate(BATCH_ROWS, performance.now() - t)
  bareStore.close()

  // Postbox: store.tx + deliveries.enqueue, then claimDue + settle until the queue is empty.
  const store = freshStore(dir, `postbox${r}`, total)
  const row = (i: number) => ({
    channel: 'webhook' as const,
    dedupKey: `${eventId(i)}:${ENDPOINT}`,
    eventId: eventId(i),
    endpointId: ENDPOINT,
    eventType: 'bench.event',
    maxAttempts: 8,
    nextAttemptAt: NOW,
  })
  t = performance.now()
  for (let i = 0; i < SINGLE_ROWS; i++) store.tx(() => store.deliveries.enqueue(row(i), NOW))
  const single = rate(SINGLE_ROWS, performance.now() - t)
  t = performance.now()
  for (let i = SINGLE_ROWS; i < total; i += BATCH) {
    store.tx(() => {
      for (let j = i; j < i + BATCH; j++) store.deliveries.enqueue(row(j), NOW)
    })
  }
  const batched = rate(BATCH_ROWS, performance.now() - t)

  let claimMs = 0
  let done = 0
  t = performance.now()
  for (;;) {
    const c0 = performance.now()
    const claimed = store.deliveries.claimDue({ limit: CLAIM_BATCH, now: NOW, defaultTimeoutMs: 15_000 })
    claimMs += performance.now() - c0
    if (claimed.length === 0) break
    const results: SettleInput[] = claimed.map((d) => ({
      id: d.id,
      claimToken: d.claimToken,
      outcome: { kind: 'success' },
      attempt: { startedAt: NOW, durationMs: 12, statusCode: 200, responseBody: 'ok' },
    }))
    store.deliveries.settle(results, NOW)
    done += claimed.length
  }
  const claimSettle = rate(done, performance.now() - t)
  if (done !== total) throw new Error(`claimed ${done} of ${total} rows`)
  store.close()
  return { bareSingle, bareBatched, single, batched, claimSettle, claimOnly: rate(done, claimMs) }
}

/** Runs the store benchmark and prints rows/s with the ratio to the bare loop. */
export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-'))
  try {
    const rounds: Figures[] = []
    for (let r = 0; r < ROUNDS; r++) rounds.push(round(dir, r))
    const best = (k: keyof Figures): number => Math.max(...rounds.map((f) => f[k]))
    const lines: [string, number, number | null][] = [
      ['enqueue, 1 row per commit', best('single'), best('bareSingle')],
      [`enqueue, ${fmt(BATCH)} rows per commit`, best('batched'), best('bareBatched')],
      [`claim (${CLAIM_BATCH}/batch) + settle success`, best('claimSettle'), best('bareBatched')],
      ['  of which claim alone', best('claimOnly'), null],
    ]
    console.log(`rows: ${fmt(SINGLE_ROWS)} single + ${fmt(BATCH_ROWS)} batched per round; best of ${ROUNDS} rounds; file database, WAL, synchronous=NORMAL`)
    console.log('| measure | postbox rows/s | bare INSERT rows/s | ratio |')
    console.log('| --- | ---: | ---: | ---: |')
    for (const [name, ours, base] of lines) {
      console.log(`| ${name} | ${fmt(ours)} | ${base === null ? '' : fmt(base)} | ${base === null ? '' : (ours / base).toFixed(2)} |`)
    }
    console.log('per round:', rounds.map((f) => `single ${fmt(f.single)}/${fmt(f.bareSingle)}, batched ${fmt(f.batched)}/${fmt(f.bareBatched)}, claim+settle ${fmt(f.claimSettle)}`).join(' | '))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
