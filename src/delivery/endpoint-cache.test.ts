import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempStore } from '../../test/helpers.js'
import { testConfig } from '../config.js'
import { systemClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import type { Store } from '../store/index.js'
import { createWebhookService } from '../webhooks/service.js'
import { createEndpointCache } from './endpoint-cache.js'

describe('endpoint cache refresh', () => {
  let t: ReturnType<typeof tempStore>
  let store: Store
  let versionReads: number
  beforeEach(() => {
    t = tempStore()
    versionReads = 0
    const endpoints = t.store.endpoints
    // Counts the version reads the cache makes (the store underneath is the real one).
    store = { ...t.store, endpoints: { ...endpoints, version: () => (versionReads++, endpoints.version()) } } as Store
  })
  afterEach(async () => {
    await t.cleanup()
  })

  it('coalesces refreshes that arrive while one runs into one more read', async () => {
    const cache = createEndpointCache(store)
    await Promise.all(Array.from({ length: 20 }, () => cache.refresh()))
    expect(versionReads).toBe(2)
    await cache.refresh()
    expect(versionReads).toBe(3)
  })

  it('a refresh called after a change sees it, even while an earlier refresh was running', async () => {
    const webhooks = createWebhookService({ store: t.store, config: testConfig({ allowNetworks: ['127.0.0.0/8'] }), clock: systemClock, rng: Math.random, log: silentLogger() })
    const ep = await webhooks.endpoints.create({ url: 'http://127.0.0.1:9/a' })
    const cache = createEndpointCache(store)
    await cache.refresh()
    expect((await cache.get(ep.id))?.url).toBe('http://127.0.0.1:9/a')
    const earlier = cache.refresh()
    await webhooks.endpoints.update(ep.id, { url: 'http://127.0.0.1:9/b' })
    await cache.refresh()
    expect(cache.peek(ep.id)?.url).toBe('http://127.0.0.1:9/b')
    await earlier
  })

  it('a failed refresh rejects its callers and the next one reads again', async () => {
    let fail = true
    const endpoints = t.store.endpoints
    const flaky = { ...t.store, endpoints: { ...endpoints, version: () => (fail ? Promise.reject(new Error('down')) : endpoints.version()) } } as Store
    const cache = createEndpointCache(flaky)
    const [a, b] = await Promise.allSettled([cache.refresh(), cache.refresh()])
    expect(a.status).toBe('rejected')
    expect(b.status).toBe('rejected')
    fail = false
    await expect(cache.refresh()).resolves.toBeUndefined()
  })
})
