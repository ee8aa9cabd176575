import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli.js'
import { AppError } from '../src/errors.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { ADMIN_KEY } from './support/api.js'

describe('library facade: pb.apps, pb.eventTypes and app_id options (docs/applications.md)', () => {
  let cleanup: (() => void) | null = null
  afterEach(() => {
    vi.restoreAllMocks()
    cleanup?.()
  })

  it('works in-process as over HTTP', async () => {
    const t = tempDir()
    cleanup = t.cleanup
    const pb = await Postbox.open({ dataDir: t.dir, adminKey: ADMIN_KEY, allowNetworks: ['127.0.0.0/8'], publicUrl: 'https://pb.example.com' })
    try {
      expect((await pb.apps.create({ id: 'lib', name: 'Lib' })).id).toBe('lib')
      const ep = await pb.endpoints.create({ url: 'http://127.0.0.1:9/x', app_id: 'lib' })
      expect(ep.app_id).toBe('lib')
      await pb.eventTypes.put('lib.evt', { schema: { type: 'object', required: ['n'] }, example: { n: 1 } })
      expect((await pb.eventTypes.get('lib.evt')).version).toBe(1)
      expect((await pb.eventTypes.list()).data.map((x) => x.name)).toEqual(['lib.evt'])
      expect(await pb.events.send({ type: 'lib.evt', data: { n: 1 }, app_id: 'lib' })).toMatchObject({ app_id: 'lib', deliveries: 1 })
      const err = await (async () => {
        try {
          await pb.events.send({ type: 'lib.evt', data: {}, app_id: 'lib' })
        } catch (e) {
          return e
        }
      })()
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).details).toEqual([expect.objectContaining({ pointer: '/n' })])
      const batch = await pb.events.sendBatch([{ type: 'lib.evt', data: { n: 2 }, app_id: 'lib' }, { type: 'lib.evt', data: {}, app_id: 'lib' }])
      expect('error' in batch[1]!).toBe(true)
      expect((await pb.events.list({ app_id: 'lib' })).data).toHaveLength(2)
      expect((await pb.deliveries.list({ app_id: 'lib' })).data).toHaveLength(2)
      const portal = await pb.apps.portalToken('lib', { ttl_seconds: 120, read_only: true })
      expect(portal.url).toBe(`https://pb.example.com/portal#token=${portal.token}`)
      expect(await pb.apps.verifyPortalToken(portal.token)).toMatchObject({ appId: 'lib', readOnly: true })
      await expect(async () => pb.endpoints.update(ep.id, { app_id: 'default' })).rejects.toThrow(AppError)
      expect(await pb.apps.remove('lib')).toEqual({ deleted: true, endpoints: 1, cancelled: 2 })
      expect(await pb.apps.verifyPortalToken(portal.token)).toBeNull()
      await expect(async () => pb.events.send({ type: 'x.y', data: {}, app_id: 'lib' })).rejects.toThrow(/Application not found/)
      await pb.apps.create({ id: 'cli', name: 'CLI' })
    } finally {
      await pb.close()
    }
    let stdout = ''
    let stderr = ''
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
    const env = { POSTBOX_DATA_DIR: t.dir, POSTBOX_LOG_LEVEL: 'silent' }
    expect(await main(['keys', 'create', '--role', 'publisher', '--app', 'cli'], env)).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({ role: 'publisher', app_id: 'cli' })
    expect(await main(['keys', 'create', '--role', 'publisher', '--app', 'missing'], env)).toBe(2)
    expect(stderr).toContain('no application missing')
  })
})
