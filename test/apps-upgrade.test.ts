import Database from 'better-sqlite3'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { MIGRATIONS } from '../src/store/sqlite/migrations.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { ADMIN_KEY } from './support/api.js'
import { startReceiver, type Receiver } from './support/receiver.js'

describe('upgrade from schema v8 (docs/applications.md)', () => {
  const open: { pb?: Postbox; rx?: Receiver; cleanup?: () => void } = {}
  afterEach(async () => {
    await open.pb?.close()
    await open.rx?.close()
    open.cleanup?.()
  })

  it('puts every endpoint, event and delivery of a v8 file in default, serves it and still delivers', async () => {
    const t = tempDir()
    open.cleanup = t.cleanup
    const rx = (open.rx = await startReceiver())
    const path = join(t.dir, 'postbox.db')
    const raw = new Database(path)
    raw.pragma('foreign_keys = ON')
    for (const step of MIGRATIONS.slice(0, 8)) raw.exec(step)
    raw.pragma('user_version = 8')
    const now = Date.now()
    const secret = `whsec_${randomBytes(32).toString('base64')}`
    const body = JSON.stringify({ id: 'evt_01jd0000000000000000000001', type: 'invoice.paid', timestamp: new Date(now).toISOString(), data: { n: 1 } })
    raw.prepare(`INSERT INTO endpoints (id, url, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`).run('ep_01jd0000000000000000000001', `${rx.url}/old`, secret, now, now)
    raw.prepare(`INSERT INTO events (id, client_id, type, body, created_at) VALUES (?, ?, ?, ?, ?)`).run('evt_01jd0000000000000000000001', 'client-1', 'invoice.paid', body, now)
    raw.prepare(`INSERT INTO deliveries (id, channel, event_id, endpoint_id, event_type, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
      VALUES (?, 'webhook', ?, ?, 'invoice.paid', 'pending', 0, 8, ?, ?, ?)`).run('dlv_01jd0000000000000000000001', 'evt_01jd0000000000000000000001', 'ep_01jd0000000000000000000001', now, now, now)
    raw.close()

    const pb = (open.pb = await Postbox.open({ db: path, adminKey: ADMIN_KEY, allowNetworks: ['127.0.0.0/8'] }))
    const get = async (p: string) => {
      const res = await pb.app.request(p, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> & { data?: { app_id: string }[] } }
    }
    expect((await get('/v1/endpoints/ep_01jd0000000000000000000001')).body.app_id).toBe('default')
    expect((await get('/v1/events/evt_01jd0000000000000000000001')).body.app_id).toBe('default')
    expect((await get('/v1/deliveries/dlv_01jd0000000000000000000001')).body.app_id).toBe('default')
    expect((await get('/v1/deliveries?app_id=default')).body.data?.map((d) => d.app_id)).toEqual(['default'])
    expect((await get('/v1/apps/default')).body).toMatchObject({ id: 'default', counts: { endpoints: 1, deliveries: { pending: 1 } } })
    // Idempotency carries over: the old client id still names its event in default.
    const repeat = await pb.events.send({ type: 'invoice.paid', data: {}, id: 'client-1' })
    expect(repeat).toMatchObject({ id: 'evt_01jd0000000000000000000001', deduplicated: true, app_id: 'default' })

    pb.start()
    await rx.waitFor(1, 10_000)
    expect(rx.requests[0]!.path).toBe('/old')
    expect(rx.requests[0]!.headers['webhook-id']).toBe('evt_01jd0000000000000000000001')
    const fresh = await pb.events.send({ type: 'invoice.paid', data: { n: 2 } })
    expect(fresh).toMatchObject({ app_id: 'default', deliveries: 1 })
    await rx.waitFor(2, 10_000)
    expect(JSON.parse(rx.requests[1]!.body).data).toEqual({ n: 2 })
  })
})
