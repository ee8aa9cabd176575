import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { addEndpoint, BACKENDS, coreBackend, endpointSettings, testPool, type CoreFamilies } from '../../../test/support/pg-core-backends.js'
import { createPgEndpointsStore } from './endpoints.js'

/** An endpoint id of the shape cursors accept. */
const E = (s: string): string => `ep_${s.padStart(26, '0')}`

describe.each(BACKENDS)('endpoints contract (%s)', (kind) => {
  const backend = coreBackend(kind)
  let f: CoreFamilies
  beforeAll(() => backend.setup())
  afterAll(() => backend.teardown())
  beforeEach(async () => {
    f = await backend.fresh()
  })

  it('stores settings and reads them back with JSON parsed and flags as booleans', async () => {
    const s = endpointSettings({
      description: 'd', eventTypes: ['order.*'], headers: { 'x-a': '1' }, method: 'PUT', timeoutMs: 5000, maxConcurrency: 3,
      rateLimit: 2.5, ordered: true, retrySchedule: [1000, 2000], signature: 'hmac-sha256', metadata: { team: 'x' },
      breakerThreshold: 50, breakerPauseMs: 1000, breakerMaxPauseMs: 9000,
    })
    await f.endpoints.insert({ ...s, id: 'ep_1', appId: 'app_a', secret: 'whsec_1', disabled: false, disabledReason: null }, 100)
    expect(await f.endpoints.get('ep_1')).toEqual({
      ...s, id: 'ep_1', appId: 'app_a', secret: 'whsec_1', previousSecrets: [], disabled: false, disabledReason: null,
      deletedAt: null, lastSuccessAt: null, lastFailureAt: null, failingSince: null, consecutiveFailures: 0,
      failuresSinceSuccess: 0, pausedUntil: null, pauseCount: 0, recentFailures: 0, recentAttempts: 0, createdAt: 100, updatedAt: 100, mode: 'push',
    })
    expect(await f.endpoints.get('ep_missing')).toBeNull()
  })

  it('lists, filters by application, updates, rotates secrets and soft-deletes', async () => {
    await addEndpoint(f, E('a'))
    await addEndpoint(f, E('b'), { appId: 'app_1' })
    await addEndpoint(f, E('c'), { appId: 'app_1', disabled: true })
    expect((await f.endpoints.active()).map((e) => e.id)).toEqual([E('a'), E('b')])
    expect((await f.endpoints.activeForApp('app_1')).map((e) => e.id)).toEqual([E('b')])
    const page = await f.endpoints.list({ limit: 2 })
    expect(page.data.map((e) => e.id)).toEqual([E('c'), E('b')])
    expect((await f.endpoints.list({ limit: 2, cursor: page.next_cursor })).data.map((e) => e.id)).toEqual([E('a')])
    expect((await f.endpoints.list({ limit: 5, appId: 'app_1' })).data.map((e) => e.id)).toEqual([E('c'), E('b')])
    expect(await f.endpoints.update(E('a'), endpointSettings({ url: 'https://x.example/', ordered: true }), 5)).toBe(true)
    expect(await f.endpoints.get(E('a'))).toMatchObject({ url: 'https://x.example/', ordered: true, updatedAt: 5 })
    expect(await f.endpoints.setSecret(E('a'), 'whsec_new', [{ secret: 'whsec_test', expiresAt: 99 }], 6)).toBe(true)
    expect(await f.endpoints.get(E('a'))).toMatchObject({ secret: 'whsec_new', previousSecrets: [{ secret: 'whsec_test', expiresAt: 99 }] })
    expect(await f.endpoints.softDelete(E('a'), 7)).toBe(true)
    expect(await f.endpoints.softDelete(E('a'), 8)).toBe(false)
    expect(await f.endpoints.update(E('a'), endpointSettings(), 9)).toBe(false)
    expect(await f.endpoints.get(E('a'))).toBeNull()
    expect(await f.endpoints.getAny(E('a'))).toMatchObject({ deletedAt: 7 })
    expect(await f.endpoints.removeForApp('app_1', 10)).toEqual([E('b'), E('c')])
    expect(await f.endpoints.list({ limit: 5 })).toEqual({ data: [], next_cursor: null })
  })

  it('counts health: failures, the breaker window, a pause and the success that ends it', async () => {
    await addEndpoint(f, 'ep_h')
    const h1 = await f.endpoints.recordFailure('ep_h', true, 10)
    expect(h1).toMatchObject({ lastFailureAt: 10, failingSince: 10, consecutiveFailures: 1, failuresSinceSuccess: 1, recentFailures: 1, recentAttempts: 1 })
    const h2 = await f.endpoints.recordFailure('ep_h', false, 11)
    expect(h2).toMatchObject({ consecutiveFailures: 1, failuresSinceSuccess: 2, recentFailures: 1, recentAttempts: 1, failingSince: 10 })
    expect(await f.endpoints.recordFailure('ep_missing', true, 12)).toBeNull()
    await f.endpoints.pause('ep_h', 500)
    expect(await f.endpoints.get('ep_h')).toMatchObject({ pausedUntil: 500, pauseCount: 1 })
    expect(await f.endpoints.recordSuccess('ep_h', 600)).toEqual({ pausedUntil: 500, steady: false })
    expect(await f.endpoints.get('ep_h')).toMatchObject({ pausedUntil: null, pauseCount: 0, consecutiveFailures: 0, failingSince: null, lastSuccessAt: 600, recentFailures: 2, recentAttempts: 2 })
    let last = { pausedUntil: null as number | null, steady: false }
    for (let i = 0; i < 20; i++) last = await f.endpoints.recordSuccess('ep_h', 700 + i)
    expect(last).toEqual({ pausedUntil: null, steady: true })
    expect(await f.endpoints.recordSuccess('ep_h', 800)).toEqual({ pausedUntil: null, steady: true })
    expect(await f.endpoints.get('ep_h')).toMatchObject({ recentFailures: 0, recentAttempts: 20, lastSuccessAt: 800 })
  })

  it('disables once, enables with health reset', async () => {
    await addEndpoint(f, 'ep_d')
    await f.endpoints.recordFailure('ep_d', true, 1)
    expect(await f.endpoints.disable('ep_d', 'failing', 2)).toBe(true)
    expect(await f.endpoints.disable('ep_d', 'again', 3)).toBe(false)
    expect(await f.endpoints.get('ep_d')).toMatchObject({ disabled: true, disabledReason: 'failing', updatedAt: 2 })
    expect(await f.endpoints.enable('ep_d', 4)).toBe(true)
    expect(await f.endpoints.get('ep_d')).toMatchObject({ disabled: false, disabledReason: null, consecutiveFailures: 0, failingSince: null, updatedAt: 4 })
  })

  it('versions move on settings and circuit changes, the settings version not on health', async () => {
    const v0 = await f.endpoints.version()
    const s0 = await f.endpoints.settingsVersion()
    await addEndpoint(f, 'ep_v')
    const v1 = await f.endpoints.version()
    const s1 = await f.endpoints.settingsVersion()
    expect(v1).toBeGreaterThan(v0)
    expect(s1).toBeGreaterThan(s0)
    expect(await f.endpoints.version()).toBe(v1)
    await f.endpoints.recordFailure('ep_v', true, 1)
    expect(await f.endpoints.settingsVersion()).toBe(s1)
    await f.endpoints.pause('ep_v', 100)
    const v2 = await f.endpoints.version()
    expect(v2).toBeGreaterThan(v1)
    expect(await f.endpoints.settingsVersion()).toBe(s1)
    await f.endpoints.disable('ep_v', 'x', 2)
    expect(await f.endpoints.settingsVersion()).toBeGreaterThan(s1)
    const v3 = await f.endpoints.version()
    await f.endpoints.invalidate()
    expect(await f.endpoints.version()).toBeGreaterThan(v3)
  })

  if (kind === 'postgres') it('sees another node’s change at its next version() read', async () => {
    const other = testPool(backend.url(), 1)
    try {
      const mine = f.endpoints
      const theirs = createPgEndpointsStore(other)
      await addEndpoint(f, 'ep_n')
      const v = await mine.version()
      const s = await mine.settingsVersion()
      await theirs.disable('ep_n', 'manual', 2)
      expect(await mine.version()).toBeGreaterThan(v)
      expect(await mine.settingsVersion()).toBeGreaterThan(s)
      expect(await mine.active()).toEqual([])
    } finally {
      await other.end()
    }
  })
})
