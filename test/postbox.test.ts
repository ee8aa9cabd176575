import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { Postbox, resolveConfig } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'

describe('resolveConfig', () => {
  it('derives the data dir from db, and db from dataDir', () => {
    expect(resolveConfig({ db: '/srv/pb/x.db' })).toMatchObject({ dbPath: '/srv/pb/x.db', dataDir: '/srv/pb' })
    expect(resolveConfig({ dataDir: '/srv/pb' })).toMatchObject({ dbPath: join('/srv/pb', 'postbox.db'), dataDir: '/srv/pb' })
    expect(resolveConfig({})).toMatchObject({ dataDir: './data' })
  })
  it('lets camelCase fields override a loaded config', () => {
    const config = loadConfig({ POSTBOX_MAX_BODY: '2048', POSTBOX_PORT: '1234' })
    expect(resolveConfig({ config, maxBody: 4096, allowNetworks: ['10.0.0.0/8'] })).toMatchObject({ port: 1234, maxBody: 4096, allowNetworks: ['10.0.0.0/8'] })
  })
})

describe('Postbox library mode (docs/api.md)', () => {
  let dir: string
  let cleanup: () => void
  let receiver: Receiver
  let pb: Postbox | null = null
  beforeEach(async () => {
    ;({ dir, cleanup } = tempDir('postbox-lib-'))
    receiver = await startReceiver()
  })
  afterEach(async () => {
    await pb?.close()
    await receiver.close()
    cleanup()
  })

  it('sends events and notifications in-process, delivers after start(), closes gracefully', async () => {
    pb = await Postbox.open({ db: join(dir, 'postbox.db'), allowNetworks: ['127.0.0.0/8'] })
    expect(statSync(join(dir, 'postbox.db')).mode & 0o077).toBe(0)
    const ep = await pb.endpoints.create({ url: `${receiver.url}/hooks`, event_types: ['user.*'] })
    expect(ep.secret).toMatch(/^whsec_/)
    const ev = await pb.events.send({ type: 'user.created', data: { id: 'u_1' } })
    expect(ev.deliveries).toBe(1)
    const n = await pb.notifications.send({ topic: 'comment.created', recipients: ['user:u_1'], title: 'New comment' })
    expect(n.deduplicated).toBe(false)
    pb.start()
    const [req] = await receiver.waitFor(1, 5000)
    expect(JSON.parse(req!.body)).toMatchObject({ id: ev.id, type: 'user.created' })
    for (let i = 0; i < 100 && (await pb.inbox('u_1').unreadCount()) === 0; i++) await new Promise((r) => setTimeout(r, 10))
    expect((await pb.inbox('u_1').list()).data[0]).toMatchObject({ title: 'New comment' })
    // pb.app is the same engine over HTTP
    expect((await pb.app.request('/healthz')).status).toBe(200)
    await pb.close()
    pb = null
    expect(existsSync(join(dir, 'postbox.db-wal')) ? statSync(join(dir, 'postbox.db-wal')).size : 0).toBe(0)
  })
})
