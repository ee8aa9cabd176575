import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, runCli, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * An overlapping deploy: two real servers on one data directory. The one holding the file's
 * delivery lease claims, so an endpoint's max_concurrency holds across both; the other serves the
 * API, stands by, and takes over when the first stops cleanly (docs/operations.md).
 */
describe('two servers on one file', () => {
  const key = newAdminKey()
  let cleanup: (() => void) | undefined
  let receiver: Receiver | undefined
  const servers: ServerProcess[] = []

  beforeAll(async () => {
    await ensureBuilt()
  }, 180_000)
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.kill()
    await receiver?.close()
    cleanup?.()
  })
  afterAll(async () => killAllChildren())

  it('deliver each event once, never more than max_concurrency at a time; the second stands by and takes over at SIGTERM', async () => {
    const t = tempDir('postbox-two-')
    cleanup = t.cleanup
    let inFlight = 0
    let most = 0
    receiver = await startReceiver(async () => {
      most = Math.max(most, ++inFlight)
      await new Promise((r) => setTimeout(r, 40))
      inFlight--
      return { status: 200 }
    })
    const env = serverEnv(t.dir, key, { POSTBOX_ALLOW_NETWORKS: '127.0.0.0/8' })
    const first = await startServer(env)
    servers.push(first)
    const second = await startServer(env)
    servers.push(second)
    const viaFirst = apiClient(() => first.baseUrl, key)
    const viaSecond = apiClient(() => second.baseUrl, key)
    expect((await viaFirst('POST', '/v1/endpoints', { url: receiver.url, max_concurrency: 2 })).status).toBe(201)

    const ids: string[] = []
    for (let i = 0; i < 12; i++) {
      const call = i % 2 === 0 ? viaFirst : viaSecond
      const res = await call('POST', '/v1/events', { type: 'order.paid', data: { i } })
      expect(res.status).toBe(202)
      ids.push(res.json.id as string)
    }
    await receiver.waitFor(12, 15_000)
    expect(receiver.requests.map((r) => r.headers['webhook-id']).sort()).toEqual([...ids].sort())
    expect(most).toBeLessThanOrEqual(2)
    const stats = await runCli(['stats'], env)
    expect(JSON.parse(stats.output).dispatcher).toMatchObject({ pid: first.child.pid })
    expect(second.output()).toContain('stands by')

    // A clean stop drains, then releases the lease: the standby takes it at its next check (1 s).
    expect(await first.stop()).toBe(0)
    servers.shift()
    const last = await viaSecond('POST', '/v1/events', { type: 'order.paid', data: { i: 12 } })
    expect(last.status).toBe(202)
    await receiver.waitFor(13, 15_000)
    expect(receiver.requests[12]!.headers['webhook-id']).toBe(last.json.id)
    expect(receiver.requests).toHaveLength(13)
    const after = await runCli(['stats'], env)
    expect(JSON.parse(after.output).dispatcher).toMatchObject({ pid: second.child.pid })
    expect(second.output()).toContain('released by its holder and taken')
  }, 60_000)
})
