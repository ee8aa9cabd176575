/**
 * The PostgreSQL suite (issue #14; docs/performance.md "PostgreSQL"), three same-run ratios:
 *
 * 1. Postbox on PostgreSQL end to end (the webhook service's `sendMany` in batches of 500, one
 *    after another as pg-boss's inserts are, the engine's dispatcher, one loopback receiver,
 *    endpoint max_concurrency 64) against pg-boss on the same server with the same receiver and
 *    64 jobs in flight (bench/pgboss.ts; two fetch batch sizes each, the faster is the baseline):
 *    through pg-boss's own `work()` API (the target's baseline: what pg-boss's users run), and
 *    through a hand-written fetch/complete loop without `work()`'s polling sleep (stricter). Two
 *    more Postbox rows: four callers of `sendMany` at once, with a pool of 10 and of 20. Each run
 *    gets a fresh database.
 * 2. One node against three on one database: N deliveries enqueued first, then 1 or 3 Postbox
 *    nodes (worker threads of this process, each with its own pool and dispatcher: bench/pg-node.ts)
 *    drain them; the endpoint's max_concurrency (64) holds across the nodes.
 * 3. Notification fan-out: one notification to a role of 1,000 users on the inbox channel (the
 *    accept transaction writes every inbox row), on PostgreSQL and on a SQLite file in the same
 *    run: `send()` time, median and p95 of FANOUT_RUNS.
 * 4. The SQLite path against the build before the asynchronous Store (commit 301aee2, extracted
 *    with `git archive` and built once into a temporary directory, or POSTBOX_BENCH_BASE_DIST):
 *    main-thread CPU per delivery end to end, each measurement in a child process, alternating.
 *
 * Next to each PostgreSQL rate: statements sent per delivery (every `pg` client query, BEGIN and
 * COMMIT included), main-thread and PostgreSQL-backend CPU per delivery (the backends of the
 * run's database, read from /proc when the server runs on this machine).
 *
 * The server: POSTBOX_BENCH_PG_URL, else POSTBOX_TEST_PG_URL; without either the PostgreSQL parts
 * print that they were skipped. BENCH_PG_N (default 3,000) sets the deliveries per PostgreSQL run.
 */
import { execFile, execSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Worker } from 'node:worker_threads'
import pg from 'pg'
import { testConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import { createNotifyService } from '../src/notify/service.js'
import { openStore, type Store } from '../src/store/index.js'
import { openPgStore } from '../src/store/pg/index.js'
import type { Figure } from './figures.js'
import { pgStack } from './pg-stack.js'
import { pgbossThroughput, type PgbossConsumer } from './pgboss.js'
import { enqueueBatch, startReceiver } from './webhooks.js'

const N = Number(process.env.BENCH_PG_N ?? 3_000)
const SQLITE_N = Number(process.env.BENCH_SQLITE_CPU_N ?? 5_000)
const SQLITE_ROUNDS = 3
const CONCURRENCY = 64
const PGBOSS_BATCHES = [4, 16]
const BASE_COMMIT = '301aee2'
const FANOUT_USERS = 1_000
const FANOUT_RUNS = 20
/** Target: Postbox on PostgreSQL at least this many times pg-boss's rate. */
export const PGBOSS_TARGET = 5
/** Target: SQLite main-thread CPU per delivery at most this many times the build before the async Store's. */
export const SQLITE_CPU_TARGET = 1.1

const DIST = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

// Statements sent by any pg client of this thread (pg-boss uses the same module).
let statements = 0
const clientProto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown }
const originalQuery = clientProto.query
clientProto.query = function (this: unknown, ...a: unknown[]) {
  statements++
  return originalQuery.apply(this, a)
}

/** Main-thread CPU ms (Linux /proc, 10 ms ticks); null elsewhere. */
function mainThreadCpuMs(): number | null {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return null
  }
}
const processCpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** A fresh database on the server at `adminUrl`, and a way to read its backends' CPU and to drop it. */
export async function freshDb(adminUrl: string) {
  const name = `pbbench_${randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    /** CPU ms the server's backends now connected to this database have used since they started; null when /proc cannot tell. */
    async backendCpuMs(): Promise<number | null> {
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])
      let ms = 0
      for (const { pid } of rows) {
        try {
          const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
          ms += (Number(f[11]) + Number(f[12])) * 10
        } catch {
          return null
        }
      }
      return rows.length > 0 ? ms : null
    },
    async drop(): Promise<void> {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      await admin.end()
    },
  }
}

/** One PostgreSQL run's rate and its costs per delivery. */
interface PgRun {
  rate: number
  statements: number
  mainCpuUs: number | null
  backendCpuUs: number | null
}

/**
 * Postbox on PostgreSQL: enqueue → receiver → settled for n events, on a fresh database;
 * `enqueuers` callers of `sendMany` (500 events each) at once, a pool of `poolMax` connections.
 */
async function postboxPg(adminUrl: string, receiver: string, n: number, enqueuers = 1, poolMax?: number): Promise<PgRun> {
  const db = await freshDb(adminUrl)
  try {
    const pb = await pgStack(db.url, poolMax)
    await pb.webhooks.endpoints.create({ url: receiver, max_concurrency: CONCURRENCY })
    pb.dispatcher.start()
    const s0 = statements
    const c0 = mainThreadCpuMs()
    const t0 = performance.now()
    let next = 0
    await Promise.all(
      Array.from({ length: enqueuers }, async () => {
        for (let i = next; i < n; i = next) {
          next += 500
          await enqueueBatch(pb, i, n)
        }
      }),
    )
    while (pb.successes() < n) await sleep(2)
    while (((await pb.store.deliveries.countByStatus()).success ?? 0) < n) await sleep(2)
    const ms = performance.now() - t0
    const c1 = mainThreadCpuMs()
    const st = statements - s0
    const backend = await db.backendCpuMs()
    await pb.close()
    return { rate: (n / ms) * 1000, statements: st / n, mainCpuUs: c0 === null || c1 === null ? null : ((c1 - c0) * 1000) / n, backendCpuUs: backend === null ? null : (backend * 1000) / n }
  } finally {
    await db.drop()
  }
}

/** pg-boss with `batch` jobs per fetch through `consumer`, on a fresh database. */
async function pgboss(adminUrl: string, receiver: string, n: number, batch: number, consumer: PgbossConsumer): Promise<PgRun> {
  const db = await freshDb(adminUrl)
  try {
    let backend: number | null = null
    let c1: number | null = null
    let st = 0
    const s0 = statements
    const c0 = mainThreadCpuMs()
    const rate = await pgbossThroughput(db.url, receiver, n, CONCURRENCY, batch, consumer, async () => {
      c1 = mainThreadCpuMs()
      st = statements - s0
      backend = await db.backendCpuMs()
    })
    const b = backend as number | null
    const c = c1 as number | null
    // Includes pg-boss's start (its schema migration on the fresh database): a few hundred statements.
    return { rate, statements: st / n, mainCpuUs: c0 === null || c === null ? null : ((c - c0) * 1000) / n, backendCpuUs: b === null ? null : (b * 1000) / n }
  } finally {
    await db.drop()
  }
}

/** `nodes` Postbox nodes in worker threads drain n enqueued deliveries on a fresh database. */
async function drain(adminUrl: string, receiver: string, n: number, nodes: number): Promise<PgRun & { processCpuUs: number; resent: number }> {
  const db = await freshDb(adminUrl)
  const workers: Worker[] = []
  try {
    const seed = await pgStack(db.url)
    await seed.webhooks.endpoints.create({ url: receiver, max_concurrency: CONCURRENCY })
    for (let i = 0; i < n; i += 500) await enqueueBatch(seed, i, n)
    for (let k = 0; k < nodes; k++) workers.push(new Worker(new URL('./pg-node.js', import.meta.url), { workerData: { url: db.url } }))
    await Promise.all(workers.map((w) => new Promise((r, j) => (w.once('message', r), w.once('error', j)))))
    const p0 = processCpuMs()
    const t0 = performance.now()
    for (const w of workers) w.postMessage('start')
    while (((await seed.store.deliveries.countByStatus()).success ?? 0) < n) await sleep(10)
    const ms = performance.now() - t0
    const p1 = processCpuMs()
    const backend = await db.backendCpuMs()
    const got = await Promise.all(
      workers.map((w) => new Promise<{ successes: number }>((r) => (w.once('message', r), w.postMessage('stop')))),
    )
    await seed.close()
    return {
      rate: (n / ms) * 1000,
      statements: Number.NaN,
      mainCpuUs: null,
      processCpuUs: ((p1 - p0) * 1000) / n,
      backendCpuUs: backend === null ? null : (backend * 1000) / n,
      resent: got.reduce((a, g) => a + g.successes, 0) - n,
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()))
    await db.drop()
  }
}

/** One notification to FANOUT_USERS inbox users, FANOUT_RUNS times, on `store`: each `send()`'s time in ms. */
async function fanout(store: Store): Promise<number[]> {
  const notify = createNotifyService({
    store, config: testConfig({}), clock: systemClock, rng: Math.random, log: silentLogger(), tokenKey: 'k', publishEvent: async () => {},
  })
  await store.tx(async (s) => {
    for (let i = 0; i < FANOUT_USERS; i++) await s.directory.putUser(`u${i}`, { roles: ['everyone'] }, Date.now())
  })
  const times: number[] = []
  for (let run = 0; run < FANOUT_RUNS; run++) {
    const t = performance.now()
    const sent = await notify.notifications.send({ topic: 'bench.fanout', recipients: ['role:everyone'], title: `run ${run}` })
    times.push(performance.now() - t)
    if (sent.deliveries !== FANOUT_USERS) throw new Error(`fan-out run ${run}: ${sent.deliveries} deliveries`)
  }
  return times
}

const p95 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)]!

/** Fan-out on a fresh PostgreSQL database and on a SQLite file, one after the other. */
async function fanouts(adminUrl: string): Promise<{ pg: number[]; sqlite: number[] }> {
  const db = await freshDb(adminUrl)
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-fanout-'))
  try {
    const pgStore = await openPgStore(db.url)
    const onPg = await fanout(pgStore).finally(() => pgStore.close())
    const sqliteStore = openStore(join(dir, 'fanout.db'))
    const onSqlite = await fanout(sqliteStore).finally(() => sqliteStore.close())
    return { pg: onPg, sqlite: onSqlite }
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await db.drop()
  }
}

/** The dist root of the build before the asynchronous Store: POSTBOX_BENCH_BASE_DIST, or built once from git; null when it cannot be. */
function baseDist(): string | null {
  if (process.env.POSTBOX_BENCH_BASE_DIST) return resolve(process.env.POSTBOX_BENCH_BASE_DIST)
  const dir = join(tmpdir(), `postbox-bench-base-${BASE_COMMIT}`)
  if (existsSync(join(dir, 'dist/bench/webhooks.js'))) return join(dir, 'dist')
  const repo = resolve(DIST, '..')
  try {
    console.log(`building ${BASE_COMMIT} into ${dir} (once)…`)
    mkdirSync(dir, { recursive: true })
    execSync(`git -C ${JSON.stringify(repo)} archive ${BASE_COMMIT} | tar -x -C ${JSON.stringify(dir)}`, { stdio: 'inherit' })
    if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'))
    execSync(`${JSON.stringify(join(repo, 'node_modules/.bin/tsc'))} -p tsconfig.build.json`, { cwd: dir, stdio: 'inherit' })
    return join(dir, 'dist')
  } catch (err) {
    console.log(`could not build ${BASE_COMMIT}: ${(err as Error).message}`)
    rmSync(dir, { recursive: true, force: true })
    return null
  }
}

/** One child-process SQLite measurement of the build at `dist`. */
async function sqliteCpu(dist: string, n: number): Promise<{ cpuUs: number; rate: number }> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(DIST, 'bench/sqlite-cpu.js'), dist, String(n)], { maxBuffer: 1 << 20 })
  return JSON.parse(stdout.trim().split('\n').pop()!) as { cpuUs: number; rate: number }
}

const us = (x: number | null): string => (x === null || Number.isNaN(x) ? 'n/a' : `${x.toFixed(1)} µs`)

/** Runs the three comparisons and prints their tables. */
export async function run(): Promise<Figure[]> {
  const figures: Figure[] = []
  const url = process.env.POSTBOX_BENCH_PG_URL || process.env.POSTBOX_TEST_PG_URL
  if (!url) {
    console.log('PostgreSQL parts skipped: set POSTBOX_BENCH_PG_URL (or POSTBOX_TEST_PG_URL)')
  } else {
    const rx = await startReceiver()
    try {
      await postboxPg(url, rx.url, 500) // warm-up: JIT, sockets
      const ours = await postboxPg(url, rx.url, N)
      const variants: [string, PgRun][] = [
        ['4 callers of sendMany at once, pool 10', await postboxPg(url, rx.url, N, 4)],
        ['4 callers of sendMany at once, pool 20', await postboxPg(url, rx.url, N, 4, 20)],
      ]
      // work() runs at its polling interval's pace whatever the batch: fewer jobs give the same rate.
      const boss: [PgbossConsumer, number, PgRun][] = []
      for (const b of PGBOSS_BATCHES) boss.push(['work', b, await pgboss(url, rx.url, Math.ceil(N / 3), b, 'work')])
      for (const b of PGBOSS_BATCHES) boss.push(['fetch', b, await pgboss(url, rx.url, N, b, 'fetch')])
      const one = await drain(url, rx.url, N, 1)
      const three = await drain(url, rx.url, N, 3)
      const fan = await fanouts(url)
      const count = (await rx.stats()).count
      console.log(`PostgreSQL: ${fmt(N)} deliveries per run, one loopback receiver (worker thread), ${CONCURRENCY} in flight; fresh database per run; receiver saw ${fmt(count)} requests in all`)
      console.log('| run | deliveries/s | statements per delivery | main-thread CPU per delivery | PostgreSQL backend CPU per delivery |')
      console.log('| --- | ---: | ---: | ---: | ---: |')
      console.log(`| Postbox, enqueue → receiver → settled (one caller of sendMany, pool 10) | ${fmt(ours.rate)} | ${ours.statements.toFixed(2)} | ${us(ours.mainCpuUs)} | ${us(ours.backendCpuUs)} |`)
      for (const [what, r] of variants) console.log(`| Postbox, ${what} | ${fmt(r.rate)} | ${r.statements.toFixed(2)} | ${us(r.mainCpuUs)} | ${us(r.backendCpuUs)} |`)
      const bossRun = (c: PgbossConsumer, b: number): string => (c === 'work' ? `pg-boss work(), batch ${b} × ${CONCURRENCY / b} workers` : `pg-boss fetch loop, batch ${b} × ${CONCURRENCY / b} loops`)
      for (const [c, b, r] of boss) console.log(`| ${bossRun(c, b)} | ${fmt(r.rate)} | ${r.statements.toFixed(2)} | ${us(r.mainCpuUs)} | ${us(r.backendCpuUs)} |`)
      console.log('| nodes (worker threads), drain of enqueued deliveries | deliveries/s | process CPU per delivery (all nodes + receiver) | PostgreSQL backend CPU per delivery | re-sent |')
      console.log('| --- | ---: | ---: | ---: | ---: |')
      for (const [k, r] of [[1, one], [3, three]] as const) console.log(`| ${k} | ${fmt(r.rate)} | ${us(r.processCpuUs)} | ${us(r.backendCpuUs)} | ${r.resent} |`)
      const fastest = (c: PgbossConsumer) => boss.filter((x) => x[0] === c).reduce((a, b) => (b[2].rate > a[2].rate ? b : a))
      const [work, loop] = [fastest('work'), fastest('fetch')]
      const vsBoss = ours.rate / work[2].rate
      const vsLoop = ours.rate / loop[2].rate
      const scale = three.rate / one.rate
      const busy = (r: typeof one): number => ((r.processCpuUs + (r.backendCpuUs ?? 0)) * r.rate) / 1e6
      console.log(`CPUs busy (node side + this database's backends): 1 node ${busy(one).toFixed(2)}, 3 nodes ${busy(three).toFixed(2)} of ${availableParallelism()}`)
      const ms = (x: number): string => `${x.toFixed(1)} ms`
      console.log(`Fan-out of one notification to ${fmt(FANOUT_USERS)} inbox users, ${FANOUT_RUNS} runs: PostgreSQL median ${ms(median(fan.pg))}, p95 ${ms(p95(fan.pg))}; SQLite median ${ms(median(fan.sqlite))}, p95 ${ms(p95(fan.sqlite))}`)
      figures.push(
        { measure: `PostgreSQL fan-out to ${fmt(FANOUT_USERS)} inbox users, p95 (SQLite in the same run)`, value: `${ms(p95(fan.pg))} (SQLite ${ms(p95(fan.sqlite))})`, target: '(report; 50 ms on SQLite)', met: null },
        { measure: `PostgreSQL end to end / ${bossRun(work[0], work[1])}, same server, receiver, ${CONCURRENCY} in flight`, value: `${fmt(ours.rate)} / ${fmt(work[2].rate)} = ${vsBoss.toFixed(2)}`, target: `>= ${PGBOSS_TARGET}`, met: vsBoss >= PGBOSS_TARGET },
        { measure: `PostgreSQL end to end / ${bossRun(loop[0], loop[1])} (no polling sleep)`, value: `${fmt(ours.rate)} / ${fmt(loop[2].rate)} = ${vsLoop.toFixed(2)}`, target: '(report)', met: null },
        { measure: 'PostgreSQL three nodes / one node (drain, worker threads, same database)', value: `${fmt(three.rate)} / ${fmt(one.rate)} = ${scale.toFixed(2)}`, target: '(report; bound: CPUs)', met: null },
        { measure: 'PostgreSQL statements per delivery (enqueue included)', value: ours.statements.toFixed(2), target: '(report)', met: null },
      )
    } finally {
      await rx.close()
    }
  }
  const base = baseDist()
  if (base === null) {
    console.log(`SQLite comparison with ${BASE_COMMIT} skipped: no build of it`)
    return figures
  }
  const before: number[] = []
  const after: number[] = []
  for (let r = 0; r < SQLITE_ROUNDS; r++) {
    before.push((await sqliteCpu(base, SQLITE_N)).cpuUs)
    after.push((await sqliteCpu(DIST, SQLITE_N)).cpuUs)
  }
  const b = median(before)
  const a = median(after)
  console.log(`SQLite end to end, ${fmt(SQLITE_N)} deliveries per round, ${SQLITE_ROUNDS} alternating rounds (child processes): main-thread CPU per delivery`)
  console.log(`| build | rounds | median |`)
  console.log('| --- | --- | ---: |')
  console.log(`| ${BASE_COMMIT} (before the asynchronous Store) | ${before.map((x) => x.toFixed(1)).join(', ')} µs | ${b.toFixed(1)} µs |`)
  console.log(`| this build | ${after.map((x) => x.toFixed(1)).join(', ')} µs | ${a.toFixed(1)} µs |`)
  figures.push({ measure: `SQLite main-thread CPU per delivery, this build / ${BASE_COMMIT}`, value: `${a.toFixed(1)} / ${b.toFixed(1)} µs = ${(a / b).toFixed(2)}`, target: `<= ${SQLITE_CPU_TARGET.toFixed(2)}`, met: a / b <= SQLITE_CPU_TARGET })
  return figures
}
