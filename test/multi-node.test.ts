import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { LEASE_MARGIN_MS } from '../src/store/deliveries.js'
import { tempDir } from './helpers.js'
import { freshPgDatabase, PG_URL } from './support/pg.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { sseReader } from './support/sse.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * Three real `postbox serve` processes on one PostgreSQL database (docs/operations.md, "PostgreSQL and several nodes"):
 * every node claims, the endpoint's max_concurrency and ordering hold across the three (measured
 * at the receiver), a node killed with SIGKILL under load loses nothing (its in-flight rows come
 * back after their claim leases: duplicates are only those re-sends), and an inbox stream on one
 * node hears a notification accepted on another (LISTEN/NOTIFY).
 */

/** The endpoint's request timeout: a killed node's claims come back after it plus the claim margin. */
const TIMEOUT_MS = 1_000
/** How long the receiver holds each request, so that claims overlap and limits are tested. */
const HOLD_MS = 40
const EVENTS = 60
const KEYS = 4
const MAX_CONCURRENCY = 2

const until = async (what: string, cond: () => boolean, timeoutMs: number, detail: () => string = () => ''): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${detail()}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe.runIf(PG_URL)('three nodes on one PostgreSQL database', () => {
  const key = newAdminKey()
  const tokenSecret = randomBytes(32).toString('base64url')
  const cleanups: (() => void | Promise<void>)[] = []
  const nodes: ServerProcess[] = []
  let env: (i: number) => Record<string, string>

  beforeAll(async () => {
    await ensureBuilt()
    const db = await freshPgDatabase()
    cleanups.push(db.drop)
    env = (i) => {
      const t = tempDir(`postbox-node${i}-`)
      cleanups.push(t.cleanup)
      // One token secret for all: an inbox token issued by one node is verified by any other.
      return serverEnv(t.dir, key, { POSTBOX_DATABASE_URL: db.url, POSTBOX_TOKEN_SECRET: tokenSecret })
    }
    // Started together: the migration runs once, under its advisory lock.
    nodes.push(...(await Promise.all([0, 1, 2].map((i) => startServer(env(i), 60_000)))))
  }, 240_000)

  afterAll(async () => {
    await killAllChildren()
    for (const c of cleanups.reverse()) await c()
  })

  it('delivers every event, never over max_concurrency across nodes, ordered keys in order, nothing lost when a node is killed', async () => {
    let inFlight = 0
    let most = 0
    const receiver: Receiver = await startReceiver(async () => {
      most = Math.max(most, ++inFlight)
      await new Promise((r) => setTimeout(r, HOLD_MS))
      inFlight--
      return { status: 200 }
    })
    cleanups.push(() => receiver.close())
    const calls = nodes.map((n) => apiClient(() => n.baseUrl, key))
    const ep = await calls[0]!('POST', '/v1/endpoints', { url: receiver.url, max_concurrency: MAX_CONCURRENCY, ordered: true, timeout_ms: TIMEOUT_MS })
    expect(ep.status).toBe(201)

    // Events go in one at a time through the three nodes in turn, so each key's order is the
    // order of acceptance; the third node is killed once a quarter have been received.
    const ids = new Map<string, number>()
    const send = async (i: number, via: number): Promise<void> => {
      const res = await calls[via]!('POST', '/v1/events', { type: 'multi.node', data: { i }, ordering_key: `k${i % KEYS}` })
      expect(res.status).toBe(202)
      ids.set(res.json.id as string, i)
    }
    for (let i = 0; i < EVENTS / 2; i++) await send(i, i % 3)
    await until('a quarter of the deliveries', () => receiver.requests.length >= EVENTS / 4, 30_000)
    await nodes[2]!.kill()
    // A request the killed node wrote has reached the receiver by now (loopback), with a margin.
    const killedAt = Date.now() + 500
    for (let i = EVENTS / 2; i < EVENTS; i++) await send(i, i % 2)

    const firstSeen = new Map<string, number>()
    const received = () => {
      for (const r of receiver.requests) {
        const id = r.headers['webhook-id'] as string
        if (!firstSeen.has(id)) firstSeen.set(id, r.at)
      }
      return firstSeen.size
    }
    // The killed node's in-flight rows are offered again after their claim leases; done when every
    // delivery is settled (a row the killed node had sent but not settled is sent again first).
    let settled = 0
    const succeeded = async (): Promise<boolean> => {
      const page = await calls[0]!('GET', '/v1/deliveries?status=success&limit=100')
      settled = (page.json.data as unknown[]).length
      return settled === EVENTS
    }
    const deadline = Date.now() + LEASE_MARGIN_MS + TIMEOUT_MS + 40_000
    while (!(await succeeded())) {
      if (Date.now() > deadline) throw new Error(`timed out: ${settled} of ${EVENTS} deliveries settled, ${received()} events received`)
      await new Promise((r) => setTimeout(r, 250))
    }
    received()
    expect([...firstSeen.keys()].sort()).toEqual([...ids.keys()].sort())

    const counts = new Map<string, number>()
    for (const r of receiver.requests) counts.set(r.headers['webhook-id'] as string, (counts.get(r.headers['webhook-id'] as string) ?? 0) + 1)
    const duplicated = [...counts].filter(([, n]) => n > 1).map(([id]) => id)
    console.log(`[multi-node] ${EVENTS} events, ${receiver.requests.length} requests, ${duplicated.length} re-sent after the kill, most in flight ${most}`)
    // A re-send is only of a request the killed node had sent (in flight, or answered and not yet settled).
    for (const id of duplicated) expect(firstSeen.get(id)!).toBeLessThanOrEqual(killedAt)
    expect(most).toBeLessThanOrEqual(MAX_CONCURRENCY)

    // Each key's events first arrived in the order they were accepted.
    const firsts = [...firstSeen].sort((a, b) => a[1] - b[1]).map(([id]) => ids.get(id)!)
    for (let k = 0; k < KEYS; k++) {
      const order = firsts.filter((i) => i % KEYS === k)
      expect(order).toEqual([...order].sort((a, b) => a - b))
    }
  }, 180_000)

  it("an inbox stream on node B receives notifications accepted on node A, in order with B's own, and replays on A", async () => {
    const [a, b] = [apiClient(() => nodes[0]!.baseUrl, key), apiClient(() => nodes[1]!.baseUrl, key)]
    expect((await a('PUT', '/v1/users/mn_user', {})).status).toBeLessThan(300)
    const token = (await a('POST', '/v1/users/mn_user/tokens', {})).json.token as string
    const open = async (node: ServerProcess, headers: Record<string, string> = {}) => {
      const ac = new AbortController()
      cleanups.push(() => ac.abort())
      const res = await fetch(`${node.baseUrl}/v1/inbox/stream?token=${token}`, { headers, signal: ac.signal })
      expect(res.status).toBe(200)
      const sse = sseReader(res)
      await sse.next((m) => m.comment === 'connected')
      return { sse, close: () => ac.abort() }
    }
    /** Reads events until `notifications` notifications have come, or fails after 15 s. */
    const read = async (sse: ReturnType<typeof sseReader>, notifications: number) => {
      const got: { id: number; event: string; title?: string }[] = []
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`stream: ${JSON.stringify(got)}`)), 15_000)))
      try {
        while (got.filter((e) => e.event === 'notification').length < notifications) {
          const m = await Promise.race([sse.next(), timeout])
          got.push({ id: Number(m.id), event: m.event!, ...(m.event === 'notification' ? { title: (JSON.parse(m.data!) as { title: string }).title } : {}) })
        }
      } finally {
        clearTimeout(timer)
      }
      return got
    }
    const notifyVia = async (via: typeof a, title: string) => {
      expect((await via('POST', '/v1/notifications', { topic: 'multi.node', recipients: ['user:mn_user'], title })).status).toBe(202)
    }
    /** Ids strictly increasing by one: none twice, none out of order, none missing (the ids come from the database). */
    const gapless = (seqs: number[]) => expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i))

    const onB = await open(nodes[1]!)
    // Accepted on A, then on B, then on A: B's stream shows all three, whichever node's inbox
    // channel wrote them.
    for (const [i, via] of [a, b, a].entries()) await notifyVia(via, `n${i}`)
    const first = await read(onB.sse, 3)
    expect(first.filter((e) => e.event === 'notification').map((e) => e.title).sort()).toEqual(['n0', 'n1', 'n2'])
    gapless(first.map((e) => e.id))

    // Both nodes at once: B's own pushes and A's notices interleave; the stream stays gapless.
    const burst = Array.from({ length: 16 }, (_, i) => `m${i}`)
    await Promise.all(burst.map((t, i) => notifyVia(i % 2 === 0 ? a : b, t)))
    const second = await read(onB.sse, burst.length)
    expect(second.filter((e) => e.event === 'notification').map((e) => e.title).sort()).toEqual([...burst].sort())
    gapless([...first, ...second].map((e) => e.id))
    onB.close()

    // Last-Event-ID on node A replays what came after it, written by either node.
    const cut = first[first.length - 1]!.id
    const onA = await open(nodes[0]!, { 'last-event-id': String(cut) })
    const replayed = await read(onA.sse, burst.length)
    expect(replayed.map((e) => e.id)).toEqual(second.map((e) => e.id))
    onA.close()
  }, 90_000)
})
