import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, runCli, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * One serving process per SQLite file, decided by a lease with an expiry (docs/operations.md,
 * "Two servers on one file"; src/delivery/lease.ts: 15 s, renewed every 5 s). The first server
 * is killed with SIGKILL under load; the standby takes over once the lease has expired, and the
 * rows the first had in flight are sent again once their own claim leases (request timeout +
 * 30 s) have run out. Nothing is lost; the only duplicates are those rows.
 */
describe('the SQLite delivery lease', () => {
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

  it('a standby takes over after the lease of a holder killed with SIGKILL, and nothing is lost', async () => {
    const t = tempDir('postbox-lease-')
    cleanup = t.cleanup
    let holdReplies = true
    const arrivals: number[] = []
    receiver = await startReceiver(async () => {
      arrivals.push(Date.now())
      // While the first server lives, requests take a while, so some are in flight at the kill.
      if (holdReplies) await new Promise((r) => setTimeout(r, 200))
      return { status: 200 }
    })
    const env = serverEnv(t.dir, key)
    const first = await startServer(env)
    servers.push(first)
    const second = await startServer(env)
    servers.push(second)
    const viaSecond = apiClient(() => second.baseUrl, key)
    expect((await viaSecond('POST', '/v1/endpoints', { url: receiver.url, max_concurrency: 4, timeout_ms: 1000 })).status).toBe(201)
    const ids: string[] = []
    for (let i = 0; i < 40; i++) {
      const res = await viaSecond('POST', '/v1/events', { type: 'order.paid', data: { i } })
      expect(res.status).toBe(202)
      ids.push(res.json.id as string)
    }
    await receiver.waitFor(4, 15_000)
    expect(second.output()).toContain('stands by')
    const killedAt = Date.now()
    await first.kill()
    servers.shift()
    holdReplies = false

    // The lease is still the dead holder's: stats shows it, and the standby does not claim yet.
    const during = JSON.parse((await runCli(['stats'], env)).output) as { dispatcher: { pid: number } }
    expect(during.dispatcher).toMatchObject({ pid: first.child.pid })

    // Lease (15 s) + a standby check, then the in-flight rows' claim leases (1 s + 30 s).
    const unique = new Set<unknown>()
    for (let i = 0; i < 600 && unique.size < 40; i++) {
      await new Promise((r) => setTimeout(r, 100))
      for (const r of receiver.requests) unique.add(r.headers['webhook-id'])
    }
    expect([...unique].sort()).toEqual([...ids].sort())
    // Nothing arrived between the kill and the lease's expiry (the standby waited for it): the
    // first request after the kill came at least ~15 s later (a renewal up to 5 s before the
    // kill makes it at least 10 s).
    const next = arrivals.find((at) => at > killedAt + 100)
    expect(next).toBeDefined()
    expect(next! - killedAt).toBeGreaterThanOrEqual(9_900)
    // Duplicates: at most the rows in flight at the kill (max_concurrency 4), sent again.
    const duplicates = receiver.requests.length - unique.size
    expect(duplicates).toBeLessThanOrEqual(4)
    expect(second.output()).toMatch(/took over the delivery lease/)
    const after = JSON.parse((await runCli(['stats'], env)).output) as { dispatcher: { pid: number }; deliveries: Record<string, number> }
    expect(after.dispatcher).toMatchObject({ pid: second.child.pid })
    // Every delivery ends as a success, the re-sent ones included.
    for (let i = 0; i < 100 && after.deliveries.success !== 40; i++) {
      await new Promise((r) => setTimeout(r, 100))
      Object.assign(after, JSON.parse((await runCli(['stats'], env)).output))
    }
    expect(after.deliveries).toMatchObject({ success: 40, pending: 0, in_flight: 0 })
  }, 120_000)
})
