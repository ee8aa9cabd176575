import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { apiClient, ensureBuilt, killAllChildren, killChild, newAdminKey, serverEnv, startServer, type ServerProcess } from './support/server-process.js'
import { openStore } from '../src/store/index.js'

describe('end to end: the real server process', () => {
  let dir: string
  let cleanup: () => void
  let receiver: Receiver
  let server: ServerProcess | null = null

  beforeAll(async () => {
    await ensureBuilt()
  }, 180_000)
  afterEach(async () => {
    await server?.kill()
    await receiver?.close()
    cleanup?.()
  })
  afterAll(async () => killAllChildren())

  it('starts with npm-start defaults, delivers a signed event to a real receiver, and exits 0 on SIGTERM', async () => {
    ;({ dir, cleanup } = tempDir('postbox-e2e-'))
    receiver = await startReceiver({ status: 200, body: 'thanks' })
    // No POSTBOX_ADMIN_KEY: the first-start rule generates one into the data dir.
    server = await startServer({
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      POSTBOX_PORT: '0',
      POSTBOX_DATA_DIR: dir,
      POSTBOX_ALLOW_NETWORKS: '127.0.0.0/8',
    })
    const keyFile = join(dir, 'admin-key.txt')
    expect(existsSync(keyFile)).toBe(true)
    const key = readFileSync(keyFile, 'utf8').trim()
    expect(server.output()).toContain(keyFile)
    expect(server.output()).not.toContain(key)
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }

    const epRes = await fetch(`${server.baseUrl}/v1/endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: `${receiver.url}/hooks`, event_types: ['order.*'] }) })
    expect(epRes.status).toBe(201)
    const ep = (await epRes.json()) as { id: string; secret: string }

    const evRes = await fetch(`${server.baseUrl}/v1/events`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'order.paid', data: { order: 42 } }) })
    expect(evRes.status).toBe(202)
    const ev = (await evRes.json()) as { id: string; deliveries: number }
    expect(ev.deliveries).toBe(1)

    const [got] = await receiver.waitFor(1, 10_000)
    expect(got!.path).toBe('/hooks')
    expect(got!.headers['webhook-id']).toBe(ev.id)
    expect(JSON.parse(got!.body)).toMatchObject({ id: ev.id, type: 'order.paid', data: { order: 42 } })
    const verified = new Webhook(ep.secret).verify(got!.body, {
      'webhook-id': String(got!.headers['webhook-id']),
      'webhook-timestamp': String(got!.headers['webhook-timestamp']),
      'webhook-signature': String(got!.headers['webhook-signature']),
    })
    expect(verified).toMatchObject({ id: ev.id })

    // the delivery log shows the success
    let status = ''
    for (let i = 0; i < 100 && status !== 'success'; i++) {
      const list = (await (await fetch(`${server.baseUrl}/v1/deliveries?endpoint_id=${ep.id}`, { headers: auth })).json()) as { data: { status: string }[] }
      status = list.data[0]?.status ?? ''
      if (status !== 'success') await new Promise((r) => setTimeout(r, 20))
    }
    expect(status).toBe('success')

    // the body limit holds on a real socket too, for a chunked upload with no Content-Length
    const huge = new TextEncoder().encode(JSON.stringify({ type: 'a', data: { pad: 'x'.repeat(400_000) } }))
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < huge.length; i += 16_384) c.enqueue(huge.slice(i, i + 16_384))
        c.close()
      },
    })
    const tooBig = await fetch(`${server.baseUrl}/v1/events`, { method: 'POST', headers: auth, body: stream, duplex: 'half' } as RequestInit)
    expect(tooBig.status).toBe(413)
    expect(((await tooBig.json()) as { error: { code: string } }).error.code).toBe('payload_too_large')
    const afterBig = await fetch(`${server.baseUrl}/readyz`)
    expect(afterBig.status).toBe(200)

    const lines = server.output().split('\n').filter((l) => l.startsWith('{'))
    expect(lines.length).toBeGreaterThan(0)
    for (const l of lines) expect(() => JSON.parse(l)).not.toThrow()

    const code = await server.stop()
    expect(code).toBe(0)
    expect(server.output()).toContain('"msg":"stopped"')
    // the WAL was checkpointed into the main file at close
    const wal = join(dir, 'postbox.db-wal')
    expect(!existsSync(wal) || readFileSync(wal).length === 0).toBe(true)
  }, 60_000)

  it('on SIGINT (Ctrl-C) drains like SIGTERM: the request in flight completes and is settled, exit 0', async () => {
    ;({ dir, cleanup } = tempDir('postbox-e2e-'))
    let answered = 0
    receiver = await startReceiver(async () => {
      await new Promise((r) => setTimeout(r, 300))
      answered++
      return { status: 200 }
    })
    const key = newAdminKey()
    server = await startServer(serverEnv(dir, key, { POSTBOX_ALLOW_NETWORKS: '127.0.0.0/8' }))
    const call = apiClient(() => server!.baseUrl, key)
    expect((await call('POST', '/v1/endpoints', { url: receiver.url })).status).toBe(201)
    const ev = await call('POST', '/v1/events', { type: 'order.paid', data: {} })
    expect(ev.status).toBe(202)
    await receiver.waitFor(1, 10_000)
    expect(answered).toBe(0)
    expect(await killChild(server.child, 'SIGINT')).toBe(0)
    expect(answered).toBe(1)
    expect(server.output()).toContain('"signal":"SIGINT"')
    expect(server.output()).toContain('"msg":"stopped"')
    const store = openStore(join(dir, 'postbox.db'))
    try {
      expect(await store.deliveries.countByStatus()).toMatchObject({ success: 1 })
      expect(await store.locks!.get('deliveries')).toBeNull()
    } finally {
      await store.close()
    }
  }, 60_000)
})
