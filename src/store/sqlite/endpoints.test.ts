import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase, type Db } from './db.js'
import { createEndpointsStore } from './endpoints.js'
import { type EndpointSettings } from '../endpoints.js'
import { tempDir } from '../../../test/helpers.js'

const settings: EndpointSettings = {
  url: 'https://example.com/hook',
  description: '',
  eventTypes: null,
  headers: {},
  method: 'POST',
  timeoutMs: 15_000,
  maxConcurrency: 16,
  rateLimit: null,
  ordered: false,
  retrySchedule: null,
  signature: 'standard',
  metadata: {},
}

describe('endpoints version', () => {
  const open: Db[] = []
  let cleanup = (): void => {}
  afterEach(() => {
    for (const db of open.splice(0)) db.close()
    cleanup()
  })
  const twoConnections = (): [Db, Db] => {
    const t = tempDir()
    cleanup = t.cleanup
    const a = openDatabase(join(t.dir, 'postbox.db'))
    const b = openDatabase(join(t.dir, 'postbox.db'))
    open.push(a, b)
    return [a, b]
  }

  it('moves on its own writes, and on commits by another connection once the check interval passed', () => {
    const [a, b] = twoConnections()
    const mine = createEndpointsStore(a, { foreignCheckMs: 0 })
    const other = createEndpointsStore(b, { foreignCheckMs: 0 })
    const v0 = mine.version()
    mine.insert({ ...settings, id: 'ep_1', secret: 'whsec_x', disabled: false, disabledReason: null }, 1)
    const v1 = mine.version()
    expect(v1).toBeGreaterThan(v0)
    expect(mine.version()).toBe(v1)
    other.disable('ep_1', 'manual', 2)
    const v2 = mine.version()
    expect(v2).toBeGreaterThan(v1)
    expect(mine.active()).toEqual([])
    expect(mine.version()).toBe(v2)
  })

  it('does not look at other connections before the interval has passed', () => {
    const [a, b] = twoConnections()
    const mine = createEndpointsStore(a, { foreignCheckMs: 60_000 })
    const other = createEndpointsStore(b)
    const v0 = mine.version()
    other.insert({ ...settings, id: 'ep_2', secret: 'whsec_x', disabled: false, disabledReason: null }, 1)
    expect(mine.version()).toBe(v0)
  })
})
