import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { ADMIN_KEY } from './support/api.js'

describe('metrics and postbox stats per application (docs/applications.md)', () => {
  let cleanup: (() => void) | null = null
  afterEach(() => {
    vi.restoreAllMocks()
    cleanup?.()
  })

  it('counts each application’s queue', async () => {
    const t = tempDir()
    cleanup = t.cleanup
    const pb = await Postbox.open({ dataDir: t.dir, adminKey: ADMIN_KEY, allowNetworks: ['127.0.0.0/8'] })
    try {
      await pb.apps.create({ id: 'm1', name: 'M1' })
      await pb.apps.create({ id: 'm2', name: 'M2' })
      await pb.endpoints.create({ url: 'http://127.0.0.1:9/a', app_id: 'm1' })
      await pb.endpoints.create({ url: 'http://127.0.0.1:9/b', app_id: 'm1' })
      await pb.endpoints.create({ url: 'http://127.0.0.1:9/c', app_id: 'm2' })
      await pb.events.send({ type: 'x.y', data: {}, app_id: 'm1' })
      await pb.events.send({ type: 'x.y', data: {}, app_id: 'm2' })
      await pb.events.send({ type: 'x.y', data: {}, app_id: 'm2' })
      const text = await (await pb.app.request('/metrics', { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).text()
      expect(text).toContain('postbox_app_queue_depth{app_id="m1",status="pending"} 2')
      expect(text).toContain('postbox_app_queue_depth{app_id="m2",status="pending"} 2')
      expect((await pb.apps.get('m2')).counts).toEqual({ endpoints: 1, deliveries: { pending: 2, in_flight: 0, success: 0, dead: 0, cancelled: 0 } })
    } finally {
      await pb.close()
    }
    let stdout = ''
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
    expect(await main(['stats'], { POSTBOX_DATA_DIR: t.dir, POSTBOX_LOG_LEVEL: 'silent' })).toBe(0)
    const stats = JSON.parse(stdout) as { apps: Record<string, Record<string, number>>; endpoints: { app_id: string }[] }
    expect(stats.apps.m1).toMatchObject({ pending: 2, dead: 0 })
    expect(stats.apps.m2).toMatchObject({ pending: 2 })
    expect(stats.endpoints.map((e) => e.app_id).sort()).toEqual(['m1', 'm1', 'm2'])
  })
})
