import Database from 'better-sqlite3'
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LEASE_TTL_MS } from '../src/delivery/lease.js'
import { LEASE_MARGIN_MS } from '../src/store/deliveries.js'
import { tempDir } from './helpers.js'
import { crashData, CRASH_ON_SQLITE, type CrashData } from './support/crash-data.js'
import { startCrashReceiver, type CrashReceiver } from './support/crash-receiver.js'
import {
  apiClient,
  ensureBuilt,
  killAllChildren,
  killChild,
  newAdminKey,
  runCli,
  serverEnv,
  spawnCli,
  startServer,
  type ServerProcess,
} from './support/server-process.js'

/**
 * docs/delivery.md under SIGKILL: the real server runs as a child process on a temp data directory and
 * is killed at random moments while events stream in, then restarted on the same files (on
 * PostgreSQL, in the `postgres` project: the same database, test/support/crash-data.ts).
 * Everything acknowledged must arrive; the only duplicates allowed are re-sends of deliveries
 * that were in flight when a kill hit.
 */

const seed = Date.now() % 100_000
let rngState = seed
/** mulberry32, seeded and printed so a failing run can be replayed. */
function rand(): number {
  rngState = (rngState + 0x6d2b79f5) | 0
  let t = rngState
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const DAY = 86_400_000
/** A delivery answered 2xx and re-sent must have been answered at most this long before a kill. */
const SETTLE_WINDOW_MS = 3_000
/** The request timeout of the endpoints these tests deliver to. */
const TIMEOUT_MS = 5_000
/**
 * How long after a kill everything may take to arrive (docs/operations.md): the restarted server
 * stands by until the killed one's delivery lease expires, and the rows that were in flight are
 * offered again only after their claim leases (request timeout + margin); then 15 s to deliver.
 */
const RECOVERY_MS = Math.max(LEASE_TTL_MS, LEASE_MARGIN_MS + TIMEOUT_MS) + 15_000

const key = newAdminKey()
const cleanups: (() => void | Promise<void>)[] = []

beforeAll(async () => {
  console.log(`[crash] seed=${seed}`)
  await ensureBuilt()
}, 180_000)

afterAll(async () => {
  await killAllChildren()
  for (const c of cleanups.reverse()) await c()
})

interface Duplicates {
  count: number
  unexplained: string[]
}

/**
 * Every seq answered 2xx more than once is a duplicate. It is explained only when each re-send
 * carries a higher postbox-attempt than the 2xx before it and a kill happened between them,
 * within SETTLE_WINDOW_MS after that earlier 2xx (the outcome was lost with the process).
 */
function duplicates(receiver: CrashReceiver, kills: readonly number[]): Duplicates {
  const unexplained: string[] = []
  let count = 0
  for (const [seq, oks] of receiver.successesBySeq()) {
    for (let i = 1; i < oks.length; i++) {
      count++
      const prev = oks[i - 1]!
      const next = oks[i]!
      const kill = kills.find((k) => k >= prev.at - 200 && k - prev.at <= SETTLE_WINDOW_MS && k <= next.at + 200)
      if (kill === undefined || next.attempt <= prev.attempt) {
        unexplained.push(`seq ${seq} (${next.webhookId}): 2xx at ${prev.at} attempt ${prev.attempt}, again at ${next.at} attempt ${next.attempt}`)
      }
    }
  }
  return { count, unexplained }
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, detail: () => string | Promise<string> = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${await detail()}`)
    await sleep(50)
  }
}

function checkDb(path: string): Database.Database {
  const db = new Database(path)
  cleanups.push(() => void (db.open && db.close()))
  expect(db.pragma('integrity_check', { simple: true })).toBe('ok')
  expect(db.pragma('foreign_key_check')).toEqual([])
  return db
}

/** A fresh crash database, removed after the suite. */
async function newData(prefix: string): Promise<CrashData> {
  const data = await crashData(prefix)
  cleanups.push(() => data.cleanup())
  return data
}

describe('crash recovery (SIGKILL)', () => {
  let data: CrashData | null = null
  let dataDir = ''
  let endpointId = ''

  /** A data directory with an endpoint and a few delivered events, when the first test did not leave one. */
  async function seedDataDir(): Promise<void> {
    const tmp = await newData('postbox-crash-')
    const receiver = await startCrashReceiver()
    cleanups.push(() => receiver.close())
    const server = await startServer(tmp.env(key))
    const call = apiClient(() => server.baseUrl, key)
    const ep = await call('POST', '/v1/endpoints', { url: receiver.url })
    expect((await call('POST', '/v1/events/batch', { events: Array.from({ length: 100 }, (_, seq) => ({ type: 'seed', data: { seq } })) })).status).toBe(202)
    await waitFor('the seed events', () => receiver.successesBySeq().size === 100, 10_000)
    expect(await server.stop()).toBe(0)
    data = tmp
    dataDir = tmp.dir
    endpointId = ep.json.id
  }

  it('loses nothing acknowledged when killed at random moments under continuous ingest', async () => {
    const receiver = await startCrashReceiver({ failEvery: 5 })
    cleanups.push(() => receiver.close())
    const d = (data = await newData('postbox-crash-'))
    dataDir = d.dir
    const env = d.env(key, { POSTBOX_RETRY_SCHEDULE: '50ms,100ms,200ms,300ms,500ms,500ms,500ms,500ms,500ms' })
    let server: ServerProcess = await startServer(env)
    const call = apiClient(() => server.baseUrl, key)
    const ep = await call('POST', '/v1/endpoints', { url: receiver.url, timeout_ms: TIMEOUT_MS })
    expect(ep.status, ep.text).toBe(201)
    endpointId = ep.json.id

    const acked = new Set<number>()
    let nextSeq = 0
    let calls = 0
    let failedCalls = 0
    let stop = false
    const ingest = async (): Promise<void> => {
      while (!stop) {
        const seqs = Array.from({ length: 10 }, () => nextSeq++)
        calls++
        try {
          const res = await call('POST', '/v1/events/batch', { events: seqs.map((seq) => ({ type: 'crash.test', data: { seq } })) })
          if (res.status >= 200 && res.status < 300) for (const s of seqs) acked.add(s)
          else failedCalls++
        } catch {
          failedCalls++ // the process died under us: not acknowledged, may or may not be committed
          await sleep(20)
        }
        await sleep(30)
      }
    }
    const loops = [ingest(), ingest()]

    const kills: number[] = []
    for (let i = 0; i < 4; i++) {
      await sleep(1200 + rand() * 1600)
      kills.push(Date.now())
      await server.kill()
      server = await startServer(env)
    }
    await sleep(1000)
    stop = true
    await Promise.all(loops)

    const missing = (): number[] => {
      const got = receiver.successesBySeq()
      return [...acked].filter((s) => !got.has(s))
    }
    await waitFor('every acknowledged event to arrive', () => missing().length === 0, RECOVERY_MS, () => `missing ${missing().length}: ${missing().slice(0, 10).join(',')}`)
    // Received is not settled: a request answered just before a kill stays in flight until its
    // claim lease ends, then is sent again and settled.
    const inFlight = (): Promise<number> => d.count(`SELECT count(*) FROM deliveries WHERE status = 'in_flight'`)
    await waitFor('no delivery left in flight', async () => (await inFlight()) === 0, RECOVERY_MS, async () => `${await inFlight()} in flight`)
    const dup = duplicates(receiver, kills)
    const failures = receiver.log.filter((r) => r.status === 503).length
    console.log(
      `[crash] continuous: acked=${acked.size} batch calls=${calls} (unanswered ${failedCalls}) kills=${kills.length} ` +
        `requests=${receiver.log.length} 503s=${failures} duplicates=${dup.count}`,
    )
    expect(dup.unexplained).toEqual([])
    expect(acked.size).toBeGreaterThan(500)

    expect(await server.stop()).toBe(0)
    await d.check()
    // Accepted means committed together: no event without its delivery.
    expect(await d.count(`SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)`)).toBe(0)
    expect(await d.count(`SELECT count(*) FROM deliveries WHERE status = 'in_flight'`)).toBe(0)
  }, 30_000 + RECOVERY_MS)

  it('loses nothing when killed while a burst of deliveries is being settled', async () => {
    if (data === null) await seedDataDir()
    const d = data!
    const receiver = await startCrashReceiver()
    cleanups.push(() => receiver.close())
    const env = d.env(key, { POSTBOX_RETRY_SCHEDULE: '50ms,100ms,200ms' })
    let server = await startServer(env)
    const call = apiClient(() => server.baseUrl, key)
    const ep = await call('PATCH', `/v1/endpoints/${endpointId}`, { url: receiver.url, timeout_ms: TIMEOUT_MS })
    expect(ep.status, ep.text).toBe(200)
    const base = 1_000_000
    for (let b = 0; b < 2; b++) {
      const events = Array.from({ length: 1000 }, (_, i) => ({ type: 'crash.burst', data: { seq: base + b * 1000 + i } }))
      const res = await call('POST', '/v1/events/batch', { events })
      expect(res.status, res.text).toBe(202)
    }
    const killAfter = 300 + Math.floor(rand() * 900)
    await waitFor(`${killAfter} deliveries`, () => receiver.log.length >= killAfter, 15_000)
    const kills = [Date.now()]
    await server.kill()
    const seenAtKill = receiver.log.length
    server = await startServer(env)
    const got = (): number => [...receiver.successesBySeq().keys()].filter((s) => s >= base).length
    // Received is not settled: a request answered just before the kill stays in flight until its
    // claim lease ends, then is sent again and settled.
    const open = (): Promise<number> => d.count(`SELECT count(*) FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE e.type = 'crash.burst' AND d.status IN ('pending', 'in_flight')`)
    const states = (): Promise<unknown[]> => d.rows(`SELECT d.status, d.attempts, d.last_error AS error, d.last_status_code AS code, count(*) AS n
      FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.type = 'crash.burst' GROUP BY 1, 2, 3, 4`)
    await waitFor('all 2,000 burst events, settled', async () => got() === 2000 && (await open()) === 0, RECOVERY_MS, async () => `got ${got()}: ${JSON.stringify(await states())}`)
    const dup = duplicates(receiver, kills)
    console.log(`[crash] burst: killed after ${seenAtKill} of 2000 deliveries, requests=${receiver.log.length} duplicates=${dup.count}`)
    expect(dup.unexplained).toEqual([])
    expect(await server.stop()).toBe(0)

    await d.check()
    const burst = await d.rows<{ status: string; attempts: number; logged: number }>(`SELECT d.status, d.attempts,
        (SELECT count(*) FROM attempts a WHERE a.delivery_id = d.id) + (CASE WHEN d.success_started_at IS NULL THEN 0 ELSE 1 END) AS logged
      FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.type = 'crash.burst'`)
    expect(burst).toHaveLength(2000)
    expect(burst.filter((r) => r.status !== 'success')).toEqual([])
    // A kill may lose an attempt's log row, never invent one: logged attempts <= spent attempts.
    expect(burst.filter((r) => r.logged > r.attempts || r.logged === 0)).toEqual([])
  }, 30_000 + RECOVERY_MS)

  it('inbox notifications survive kills exactly once, with exact unread counts', async () => {
    const d = await newData('postbox-crash-inbox-')
    const env = d.env(key, { POSTBOX_NOTIFICATION_RETRY_SCHEDULE: '50ms,100ms,200ms,500ms,500ms' })
    let server = await startServer(env)
    const call = apiClient(() => server.baseUrl, key)
    const users = ['u_1', 'u_2', 'u_3', 'u_4', 'u_5']
    const acked: string[] = []
    let stop = false
    let n = 0
    const ingest = async (): Promise<void> => {
      while (!stop) {
        const dedup = `k${n++}`
        try {
          const res = await call('POST', '/v1/notifications', { topic: 'crash.inbox', recipients: users.map((u) => `user:${u}`), title: dedup, dedup_key: dedup })
          if (res.status === 202) acked.push(dedup)
        } catch {
          await sleep(20)
        }
      }
    }
    const loops = [ingest(), ingest()]
    const kills: number[] = []
    for (let i = 0; i < 3; i++) {
      await sleep(600 + rand() * 900)
      kills.push(Date.now())
      await server.kill()
      server = await startServer(env)
    }
    stop = true
    await Promise.all(loops)
    const open = (): Promise<number> => d.count(`SELECT count(*) FROM deliveries WHERE channel = 'inbox' AND status IN ('pending', 'in_flight')`)
    await waitFor('every inbox delivery to finish', async () => (await open()) === 0, RECOVERY_MS, async () => `${await open()} open`)
    expect(await server.stop()).toBe(0)
    await d.check()
    const perUser = await d.rows<{ user: string; title: string; n: number }>(`SELECT user_id AS "user", title, count(*) AS n FROM inbox_messages GROUP BY user_id, title`)
    const twice = perUser.filter((r) => r.n > 1)
    const got = new Set(perUser.map((r) => `${r.user}/${r.title}`))
    const missing = acked.flatMap((k) => users.map((u) => `${u}/${k}`)).filter((x) => !got.has(x))
    const counters = await d.rows<{ user: string; counted: number; actual: number }>(`SELECT c.user_id AS "user", c.unread_count AS counted,
        (SELECT count(*) FROM inbox_messages m WHERE m.user_id = c.user_id AND m.read = 0 AND m.archived = 0) AS actual
      FROM inbox_counters c`)
    console.log(`[crash] inbox: ${acked.length} notifications x ${users.length} users acknowledged, ${kills.length} kills, duplicated messages ${twice.length}`)
    expect(missing).toEqual([])
    expect(twice).toEqual([])
    expect(counters.filter((c) => c.counted !== c.actual)).toEqual([])
    expect(counters.length).toBe(users.length)
  }, 30_000 + RECOVERY_MS)

  // The SQLite file's own sweep and backup: PostgreSQL's retention is tested in src/store/pg, and
  // `postbox backup` refuses there (pg_dump).
  if (CRASH_ON_SQLITE) it('keeps the database consistent when killed during the retention sweep', async () => {
    if (dataDir === '') await seedDataDir()
    const path = join(dataDir, 'postbox.db')
    const OLD = 30_000
    const old = Date.now() - 40 * DAY
    const db = new Database(path)
    const before = {
      deliveries: db.prepare(`SELECT count(*) FROM deliveries`).pluck().get() as number,
      events: db.prepare(`SELECT count(*) FROM events`).pluck().get() as number,
    }
    db.transaction(() => {
      // Written 40 days ago, so before the seeded events: retention walks events in rowid order
      // (docs/operations.md), so the seeded rows move up and these take the rowids below them.
      db.prepare(`UPDATE events SET rowid = rowid + ?`).run(OLD)
      const ev = db.prepare(`INSERT INTO events (rowid, id, type, body, created_at) VALUES (?, ?, 'old.event', '{}', ?)`)
      const dl = db.prepare(`INSERT INTO deliveries (id, channel, event_id, endpoint_id, event_type, status, attempts,
          max_attempts, next_attempt_at, created_at, updated_at, completed_at)
        VALUES (?, 'webhook', ?, ?, 'old.event', ?, 1, 8, ?, ?, ?, ?)`)
      const at = db.prepare(`INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code)
        VALUES (?, 1, ?, 3, 'success', 200)`)
      for (let i = 0; i < OLD; i++) {
        const n = String(i).padStart(6, '0')
        ev.run(i + 1, `evt_old_${n}`, old)
        dl.run(`dlv_old_${n}`, `evt_old_${n}`, endpointId, i % 10 === 0 ? 'dead' : 'success', old, old, old, old)
        at.run(`dlv_old_${n}`, old)
      }
    })()
    db.close()

    const counts = (): { oldDeliveries: number; oldAttempts: number; oldEvents: number; deliveries: number; events: number } => {
      const c = checkDb(path)
      const q = (sql: string): number => c.prepare(sql).pluck().get() as number
      const out = {
        oldDeliveries: q(`SELECT count(*) FROM deliveries WHERE id LIKE 'dlv_old_%'`),
        oldAttempts: q(`SELECT count(*) FROM attempts WHERE delivery_id LIKE 'dlv_old_%'`),
        oldEvents: q(`SELECT count(*) FROM events WHERE id LIKE 'evt_old_%'`),
        deliveries: q(`SELECT count(*) FROM deliveries WHERE id NOT LIKE 'dlv_old_%'`),
        events: q(`SELECT count(*) FROM events WHERE id NOT LIKE 'evt_old_%'`),
      }
      c.close()
      return out
    }
    const env = serverEnv(dataDir, key)
    let last = counts()
    expect(last.oldDeliveries).toBe(OLD)
    // Kill each run just after the sweep's first batches commit, so it dies mid-sweep.
    const afterKills: number[] = []
    const watch = new Database(path, { readonly: true })
    cleanups.push(() => void (watch.open && watch.close()))
    const oldLeft = watch.prepare(`SELECT count(*) FROM deliveries WHERE id BETWEEN 'dlv_old_000000' AND 'dlv_old_999999'`).pluck()
    for (let i = 0; i < 3; i++) {
      const child = spawnCli(['serve'], env)
      const started = Date.now()
      while ((oldLeft.get() as number) >= last.oldDeliveries && Date.now() - started < 10_000) await sleep(2)
      await sleep(Math.floor(rand() * 15))
      await killChild(child, 'SIGKILL')
      const now = counts()
      // Each delivery leaves with its attempt in one transaction; nothing recent is touched.
      expect(now.oldAttempts).toBe(now.oldDeliveries)
      expect(now.oldDeliveries).toBeLessThanOrEqual(last.oldDeliveries)
      expect(now.deliveries).toBe(before.deliveries)
      expect(now.events).toBe(before.events)
      last = now
      afterKills.push(now.oldDeliveries)
    }
    watch.close()
    expect(afterKills.some((n) => n > 0 && n < OLD)).toBe(true)
    const server = await startServer(env)
    await waitFor('the sweep to finish', () => {
      last = counts()
      return last.oldDeliveries === 0 && last.oldEvents === 0
    }, 20_000, () => JSON.stringify(last))
    console.log(`[crash] retention: killed mid-sweep 3 times, old deliveries left ${OLD}→${afterKills.join('→')}; final ${JSON.stringify(last)}`)
    expect(last.oldAttempts).toBe(0)
    expect(last.deliveries).toBe(before.deliveries)
    expect(last.events).toBe(before.events)
    expect(await server.stop()).toBe(0)
  }, 60_000)

  if (CRASH_ON_SQLITE) it('leaves a backup file that is either absent or complete when the backup is killed', async () => {
    if (dataDir === '') await seedDataDir()
    const path = join(dataDir, 'postbox.db')
    const db = new Database(path)
    const body = JSON.stringify({ pad: 'x'.repeat(4000) })
    db.transaction(() => {
      const ev = db.prepare(`INSERT INTO events (id, type, body, created_at) VALUES (?, 'big.event', ?, ?)`)
      for (let i = 0; i < 12_000; i++) ev.run(`evt_big_${String(i).padStart(6, '0')}`, body, Date.now())
    })()
    const expected = db.prepare(`SELECT count(*) FROM events`).pluck().get() as number
    db.close()
    const env = serverEnv(dataDir, key)
    const out = tempDir('postbox-backup-')
    cleanups.push(out.cleanup)

    const t0 = Date.now()
    const full = await runCli(['backup', join(out.dir, 'full.db')], env)
    const fullMs = Date.now() - t0
    expect(full.code, full.output).toBe(0)
    const verify = (file: string): 'absent' | 'complete' => {
      if (!existsSync(file)) return 'absent'
      expect(existsSync(`${file}-journal`)).toBe(false)
      // A backup carries the signing secrets too: owner-only, like the database.
      expect(statSync(file).mode & 0o077).toBe(0)
      const b = new Database(file, { readonly: true })
      try {
        expect(b.pragma('integrity_check', { simple: true })).toBe('ok')
        expect(b.prepare(`SELECT count(*) FROM events`).pluck().get()).toBe(expected)
      } finally {
        b.close()
      }
      return 'complete'
    }
    expect(verify(join(out.dir, 'full.db'))).toBe('complete')

    // Kill each run at a random moment after its temporary copy appears, i.e. mid-copy.
    const outcomes: string[] = []
    let midCopy = 0
    // The same target every time, as a nightly job would: each run also clears what the
    // previous killed run left behind.
    const file = join(out.dir, 'killed.db')
    for (let i = 0; i < 6; i++) {
      rmSync(file, { force: true })
      const child = spawnCli(['backup', file], env)
      const tmpPrefix = `.killed.db.${child.pid}.`
      const started = Date.now()
      while (!readdirSync(out.dir).some((f) => f.startsWith(tmpPrefix)) && !existsSync(file) && Date.now() - started < 5000) await sleep(1)
      await sleep(Math.round(rand() * fullMs * 0.3))
      const copying = !existsSync(file)
      await killChild(child, 'SIGKILL')
      if (copying) midCopy++
      outcomes.push(`${copying ? 'mid-copy' : 'after'}:${verify(file)}`)
    }
    expect(midCopy).toBeGreaterThan(0)
    const stray = readdirSync(out.dir).filter((f) => /\.tmp(-journal)?$/.test(f))
    console.log(`[crash] backup: full ${fullMs} ms (${(statSync(path).size / 1e6).toFixed(1)} MB); kills ${outcomes.join(' ')}; temp files left: ${stray.join(" ")}`)
    // Each backup removes the temporary copies earlier killed runs left; only the last run's remain.
    expect(stray.length).toBeLessThanOrEqual(2)
  }, 60_000)
})
