import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import { tempDir } from './helpers.js'
import { findPgBinDir, startPgCluster, type PgCluster } from './support/pg-cluster.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { sseReader } from './support/sse.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * Three `postbox serve` nodes on a private PostgreSQL server that the test terminates, restarts
 * and stops while events flow to a real receiver (docs/operations.md, "When the database drops
 * connections or restarts"). After each fault every node is still running, becomes ready again by
 * itself (/readyz), listens again (one `postbox-listen` connection per node, and an inbox stream
 * open on one node since the start hears a notification accepted on another), and every event
 * answered 202 reaches the receiver (at least once, counted by id) and is settled as a success;
 * the endpoint's max_concurrency holds at the receiver throughout. Requests that meet the
 * database gone answer 503 `unavailable`, never anything else. Everything is proved by state
 * (what the nodes and the receiver report), never by elapsed time; the bounds below only turn a
 * hang into a failure.
 */

const NODES = 3
const MAX_CONCURRENCY = 2
/** Events sent through the nodes per phase at most (bounded load; a phase stops sending once its fault is over). */
const EVENTS_PER_PHASE = 200
/** Senders wait while this many accepted events have not reached the receiver (a steady flow, not a backlog on a busy machine). */
const BACKLOG = 30
/** How long the receiver holds each request, so that claims overlap and the limit is tested. */
const HOLD_MS = 15
/**
 * How long the server stays stopped once every node says it is unavailable. The issue asked for
 * 30 s; 4 s keeps the file short and still spans several reconnect attempts of every node
 * (the backoff's first delays are well under a second).
 */
const STOPPED_MS = 4_000
/** A bound for waits that should end within seconds (a claim lost with its connection waits out its lease: timeout + 30 s). */
const RECOVERY_BOUND_MS = 90_000

const requirePg = process.env.POSTBOX_REQUIRE_PG === '1'
const bin = findPgBinDir()
if (!bin && requirePg) throw new Error('POSTBOX_REQUIRE_PG=1 but no PostgreSQL server binaries were found')

describe.runIf(bin)('nodes that outlive their database connections', () => {
  const key = newAdminKey()
  const cleanups: (() => void | Promise<void>)[] = []
  const nodes: ServerProcess[] = []
  let cluster: PgCluster
  let receiver: Receiver
  let dbUrl: string
  let calls: ReturnType<typeof apiClient>[]
  /** Every event a node answered 202 for. */
  const accepted = new Set<string>()
  /** Answers other than 202 and 503 `unavailable` (or no answer at all), with where they came from. */
  const unexpected: string[] = []
  let inFlight = 0
  let most = 0

  /** Runs one SQL statement on the private server's `postgres` database from a connection of its own. */
  const admin = async (sql: string): Promise<pg.QueryResultRow[]> => {
    const c = new pg.Client({ connectionString: cluster.url })
    c.on('error', () => {})
    await c.connect()
    try {
      return (await c.query(sql)).rows
    } finally {
      await c.end().catch(() => {})
    }
  }
  const dbName = 'pb_outage'
  const tokenSecret = randomBytes(32).toString('base64url')
  /** An inbox stream open on node 1 from the start, through every fault. */
  let stream: ReturnType<typeof sseReader>

  beforeAll(async () => {
    await ensureBuilt()
    cluster = await startPgCluster()
    cleanups.push(() => cluster.destroy())
    await admin(`CREATE DATABASE ${dbName}`)
    dbUrl = cluster.url.replace(/\/postgres$/, `/${dbName}`)
    receiver = await startReceiver(async () => {
      most = Math.max(most, ++inFlight)
      await new Promise((r) => setTimeout(r, HOLD_MS))
      inFlight--
      return { status: 200 }
    })
    cleanups.push(() => receiver.close())
    const env = (i: number): Record<string, string> => {
      const t = tempDir(`postbox-outage${i}-`)
      cleanups.push(t.cleanup)
      // One token secret for all: the inbox token is verified by every node. The last node
      // sends its statements unprepared (the nodes died with prepared statements on or off).
      return serverEnv(t.dir, key, {
        POSTBOX_DATABASE_URL: dbUrl,
        POSTBOX_TOKEN_SECRET: tokenSecret,
        ...(i === NODES - 1 ? { POSTBOX_PG_PREPARED_STATEMENTS: 'false' } : {}),
      })
    }
    nodes.push(...(await Promise.all(Array.from({ length: NODES }, (_, i) => startServer(env(i), 60_000)))))
    calls = nodes.map((n) => apiClient(() => n.baseUrl, key))
    const ep = await calls[0]!('POST', '/v1/endpoints', { url: receiver.url, max_concurrency: MAX_CONCURRENCY, timeout_ms: 2_000 })
    expect(ep.status).toBe(201)
    expect((await calls[0]!('PUT', '/v1/users/outage_user', {})).status).toBeLessThan(300)
    const token = (await calls[0]!('POST', '/v1/users/outage_user/tokens', {})).json.token as string
    const ac = new AbortController()
    cleanups.push(() => ac.abort())
    const res = await fetch(`${nodes[1]!.baseUrl}/v1/inbox/stream?token=${token}`, { signal: ac.signal })
    expect(res.status).toBe(200)
    stream = sseReader(res)
    await stream.next((m) => m.comment === 'connected')
  }, 240_000)

  afterAll(async () => {
    await killAllChildren()
    for (const c of cleanups.reverse()) await c()
  })

  /** Sends up to EVENTS_PER_PHASE events, one at a time through each node at once, until `stop()`; resolves when the last answer is in. */
  const traffic = (phase: string) => {
    let stopped = false
    let sent = 0
    const lane = async (via: number): Promise<void> => {
      while (!stopped && sent < EVENTS_PER_PHASE) {
        if (accepted.size - receiver.requests.length >= BACKLOG) {
          await new Promise((r) => setTimeout(r, 10))
          continue
        }
        sent++
        try {
          const res = await calls[via]!('POST', '/v1/events', { type: 'outage.test', data: { phase, n: sent } })
          if (res.status === 202) accepted.add(res.json.id as string)
          else if (!(res.status === 503 && res.json?.error?.code === 'unavailable')) unexpected.push(`${phase} node ${via}: ${res.status} ${res.text.slice(0, 200)}`)
        } catch (err) {
          unexpected.push(`${phase} node ${via}: no answer (${String(err)})`)
        }
        await new Promise((r) => setTimeout(r, 5))
      }
    }
    const done = Promise.all(nodes.map((_, via) => lane(via)))
    return {
      stop: async () => {
        stopped = true
        await done
      },
    }
  }

  const alive = (): string[] => nodes.flatMap((n, i) => (n.child.exitCode === null && n.child.signalCode === null ? [] : [`node ${i} exited (${n.child.exitCode ?? n.child.signalCode}):\n${n.output().slice(-3000)}`]))
  /** Waits for `cond`; fails at once when a node has exited, and after RECOVERY_BOUND_MS. */
  const until = async (what: string, cond: () => boolean | Promise<boolean>, detail: () => string = () => '', pollMs = 50): Promise<void> => {
    const deadline = Date.now() + RECOVERY_BOUND_MS
    while (!(await cond())) {
      const dead = alive()
      if (dead.length > 0) throw new Error(`waiting for ${what}: ${dead.join('\n')}`)
      if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} ${detail()}`)
      await new Promise((r) => setTimeout(r, pollMs))
    }
  }
  const received = (): Set<string> => new Set(receiver.requests.map((r) => r.headers['webhook-id'] as string))
  /** Resolves once the receiver has `n` more requests than now. */
  const moreRequests = (n: number) => {
    const target = receiver.requests.length + n
    return until(`${n} more requests at the receiver`, () => receiver.requests.length >= target)
  }
  const readiness = async (): Promise<number[]> => Promise.all(nodes.map((n) => fetch(`${n.baseUrl}/readyz`).then((r) => r.status, () => 0)))
  const listeners = async (): Promise<number> =>
    Number((await admin(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = '${dbName}' AND application_name = 'postbox-listen'`))[0]!.n)
  const successes = async (): Promise<Set<string>> => {
    const ids = new Set<string>()
    let cursor: string | null = null
    do {
      const page = await calls[0]!('GET', `/v1/deliveries?status=success&limit=200${cursor ? `&cursor=${cursor}` : ''}`)
      if (page.status !== 200) return new Set()
      for (const d of page.json.data as { event_id: string }[]) ids.add(d.event_id)
      cursor = page.json.next_cursor as string | null
    } while (cursor)
    return ids
  }

  /** The state every phase ends in: nodes up and ready, listening, every accepted event received and settled, the limit held. */
  const expectRecovered = async (phase: string): Promise<void> => {
    expect(alive()).toEqual([])
    await until(`${phase}: every node ready`, async () => (await readiness()).every((s) => s === 200))
    expect(alive()).toEqual([])
    await until(`${phase}: one listening connection per node`, async () => (await listeners()) === NODES)
    // Node 1's stream, open since the start, hears a notification accepted on node 0 (LISTEN works again).
    const title = `after ${phase}`
    expect((await calls[0]!('POST', '/v1/notifications', { topic: 'outage', recipients: ['user:outage_user'], title })).status).toBe(202)
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${phase}: the stream on node 1 did not hear "${title}"`)), RECOVERY_BOUND_MS)))
    try {
      await Promise.race([stream.next((m) => m.event === 'notification' && (JSON.parse(m.data!) as { title: string }).title === title), bound])
    } finally {
      clearTimeout(timer)
    }
    let missing: string[] = []
    await until(
      `${phase}: every accepted event received and settled`,
      async () => {
        const got = received()
        const ok = await successes()
        missing = [...accepted].filter((id) => !got.has(id) || !ok.has(id))
        return missing.length === 0
      },
      () => `(${missing.length} of ${accepted.size} missing: ${missing.slice(0, 5).join(', ')})`,
    )
    expect(unexpected).toEqual([])
    expect(most).toBeLessThanOrEqual(MAX_CONCURRENCY)
    expect(alive()).toEqual([])
    const counts = new Map<string, number>()
    for (const r of receiver.requests) counts.set(r.headers['webhook-id'] as string, (counts.get(r.headers['webhook-id'] as string) ?? 0) + 1)
    console.log(`[pg-outage] ${phase}: ${accepted.size} accepted, ${receiver.requests.length} requests, ${[...counts.values()].filter((n) => n > 1).length} re-sent, most in flight ${most}`)
  }

  /**
   * Terminates every backend of the nodes at a moment when at least one of them is inside an
   * explicit transaction (between statements, or in one that is not its first): a connection
   * checked out of its pool, the case that killed nodes (an idle one was always handled by the
   * pool). One statement reads pg_stat_activity and terminates, so the moment is the one it
   * saw; it is repeated until it found such a moment.
   */
  const terminateAmidTransaction = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: cluster.url })
    c.on('error', () => {})
    await c.connect()
    try {
      await until('a node inside a transaction', async () => {
        const { rows } = await c.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()
             AND EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND (state = 'idle in transaction' OR xact_start < query_start))`,
          [dbName],
        )
        return rows.length > 0
      }, () => '', 5)
    } finally {
      await c.end().catch(() => {})
    }
  }

  it('survives every backend of every node being terminated, three times, under load', async () => {
    const flow = traffic('terminate')
    for (let round = 0; round < 3; round++) {
      await moreRequests(8)
      await terminateAmidTransaction()
    }
    await moreRequests(8)
    await flow.stop()
    await expectRecovered('terminate')
  }, 180_000)

  it('survives PostgreSQL restarting fast, then immediate, under load', async () => {
    for (const mode of ['fast', 'immediate'] as const) {
      const flow = traffic(`restart ${mode}`)
      await moreRequests(8)
      await cluster.restart(mode)
      await until(`restart ${mode}: every node ready`, async () => (await readiness()).every((s) => s === 200))
      await moreRequests(8)
      await flow.stop()
      await expectRecovered(`restart ${mode}`)
    }
  }, 240_000)

  it('says unavailable while PostgreSQL is stopped, answers 503 unavailable, and comes back by itself', async () => {
    const flow = traffic('stopped')
    await moreRequests(8)
    await cluster.stop('fast')
    await until('every node unready', async () => (await readiness()).every((s) => s === 503))
    await flow.stop()
    // What needs the database answers 503 with the stable code, and nothing is accepted.
    for (const call of calls) {
      const post = await call('POST', '/v1/events', { type: 'outage.test', data: { phase: 'down' } })
      expect([post.status, post.json?.error?.code]).toEqual([503, 'unavailable'])
      const list = await call('GET', '/v1/endpoints')
      expect([list.status, list.json?.error?.code]).toEqual([503, 'unavailable'])
    }
    await new Promise((r) => setTimeout(r, STOPPED_MS))
    expect(alive()).toEqual([])
    expect(await readiness()).toEqual(nodes.map(() => 503))
    await cluster.start()
    const after = traffic('after stop')
    await moreRequests(8)
    await after.stop()
    await expectRecovered('stopped')
  }, 240_000)
})
