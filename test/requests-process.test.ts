import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, runCli, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * Delayed work under SIGKILL, with the real server as a child process: events and requests
 * accepted with a delay are written at once, so a kill while they wait loses none; the next
 * process sends every one, none before its time. And the CLI's send-request and stats.
 */

const key = newAdminKey()
const cleanups: (() => void | Promise<void>)[] = []
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

beforeAll(async () => {
  await ensureBuilt()
}, 180_000)

afterAll(async () => {
  await killAllChildren()
  for (const c of cleanups.reverse()) await c()
})

async function waitUntil(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

describe('delayed events and requests across kill -9', () => {
  it('loses none of those waiting when the process is killed, and sends none early', async () => {
    const { dir, cleanup } = tempDir('postbox-delay-crash-')
    cleanups.push(cleanup)
    const rx: Receiver = await startReceiver({ status: 200 })
    cleanups.push(() => rx.close())
    const env = serverEnv(dir, key, { POSTBOX_POLL_INTERVAL: '50ms' })
    let server: ServerProcess = await startServer(env)
    const call = apiClient(() => server.baseUrl, key)
    expect((await call('POST', '/v1/endpoints', { url: `${rx.url}/events` })).status).toBe(201)

    const due = new Map<string, number>()
    for (let i = 0; i < 30; i++) {
      const ev = await call('POST', '/v1/events', { type: 'delayed', data: { i }, delay: '2s' })
      expect(ev.status).toBe(202)
      due.set(`evt:${i}`, Date.parse(ev.json.deliver_at))
      const rq = await call('POST', '/v1/requests', { url: `${rx.url}/requests/${i}`, body: { i }, delay: '2s' })
      expect(rq.status).toBe(202)
      due.set(`req:${i}`, Date.parse(rq.json.deliver_at))
    }
    await server.kill()
    expect(rx.requests).toHaveLength(0)

    server = await startServer(env)
    await waitUntil(() => new Set(rx.requests.map((q) => q.path + q.body)).size >= 60, 20_000, 'all 60 delayed deliveries')
    for (const q of rx.requests) {
      const i = (JSON.parse(q.body) as { i?: number; data?: { i: number } }).i ?? (JSON.parse(q.body) as { data: { i: number } }).data.i
      const at = due.get(`${q.path.startsWith('/events') ? 'evt' : 'req'}:${i}`)!
      expect(q.at).toBeGreaterThanOrEqual(at - 5)
    }
    // Received, then settled: a receiver's answer comes before the settle that records it.
    let list = await call('GET', '/v1/requests?status=success&limit=100')
    for (const deadline = Date.now() + 20_000; (list.json.data as unknown[]).length < 30 && Date.now() < deadline; ) {
      await sleep(20)
      list = await call('GET', '/v1/requests?status=success&limit=100')
    }
    expect(list.json.data).toHaveLength(30)
    await server.stop()
  }, 60_000)
})

describe('postbox send-request and stats', () => {
  it('enqueues a request from a script that the serving process sends, and stats counts requests', async () => {
    const { dir, cleanup } = tempDir('postbox-send-request-')
    cleanups.push(cleanup)
    const rx = await startReceiver({ status: 200 })
    cleanups.push(() => rx.close())
    const env = serverEnv(dir, key, { POSTBOX_POLL_INTERVAL: '50ms' })
    const server = await startServer(env)
    const r = await runCli(['send-request', `${rx.url}/cli?x=1`, '--method', 'put', '--header', 'x-a: 1', '--header', 'X-B:two', '--json-body', '{"a":[1,2]}', '--dedup-key', 'k1'], env)
    expect(r.code, r.output).toBe(0)
    const out = JSON.parse(r.output)
    expect(out).toMatchObject({ method: 'PUT', deduplicated: false, status: 'pending' })
    const [got] = await rx.waitFor(1, 10_000)
    expect(got).toMatchObject({ method: 'PUT', path: '/cli?x=1', body: '{"a":[1,2]}' })
    expect(got!.headers).toMatchObject({ 'x-a': '1', 'x-b': 'two', 'content-type': 'application/json', 'postbox-request-id': out.id })
    const again = await runCli(['send-request', `${rx.url}/cli?x=1`, '--dedup-key', 'k1'], env)
    expect(JSON.parse(again.output)).toMatchObject({ id: out.id, deduplicated: true })
    expect((await runCli(['send-request', 'http://10.0.0.1/'], env)).code).toBe(1)
    expect((await runCli(['send-request', `${rx.url}/`, '--header', 'novalue'], env)).code).toBe(2)
    const call = apiClient(() => server.baseUrl, key)
    await waitUntil(() => rx.requests.length >= 1, 5_000, 'sent')
    let stats: { requests: Record<string, number> } = { requests: {} }
    for (let i = 0; i < 100 && stats.requests.success !== 1; i++) {
      stats = JSON.parse((await runCli(['stats'], env)).output)
      if (stats.requests.success !== 1) await sleep(50)
    }
    expect(stats.requests).toMatchObject({ success: 1, pending: 0 })
    const metrics = await call('GET', '/metrics')
    expect(metrics.text).toMatch(/postbox_deliveries_total\{channel="request",outcome="success"\} 1/)
    await server.stop()
  }, 60_000)
})
