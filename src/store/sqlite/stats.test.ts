import { afterEach, describe, expect, it } from 'vitest'
import { tempSqliteStore } from '../../../test/helpers.js'

let cleanup: (() => void) | undefined
afterEach(() => cleanup?.())

const NOW = Date.UTC(2026, 0, 1)

describe('stats', () => {
  it('oldest pending is the oldest pending delivery by creation, a scheduled retry included; next due is the earliest due time', () => {
    const t = tempSqliteStore()
    cleanup = t.cleanup
    const { store } = t
    const add = (tag: string, createdAt: number, nextAttemptAt: number): string =>
      store.deliveries.enqueue({ channel: 'inbox', notificationId: `ntf_${tag}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt }, createdAt).id
    expect(store.stats.oldestPendingCreatedAt()).toBeNull()
    // Accepted a day ago and waiting for a retry in an hour; accepted now and due now.
    add('old', NOW - 86_400_000, NOW + 3_600_000)
    add('new', NOW, NOW)
    expect(store.stats.oldestPendingCreatedAt()).toBe(NOW - 86_400_000)
    expect(store.deliveries.oldestPendingAt()).toBe(NOW)
    // A finished row does not count.
    const [claimed] = store.deliveries.claimDue({ limit: 1, now: NOW, defaultTimeoutMs: 15_000 })
    store.deliveries.settle([{ id: claimed!.id, claimToken: claimed!.claimToken, outcome: { kind: 'success' } }], NOW)
    expect(store.stats.oldestPendingCreatedAt()).toBe(NOW - 86_400_000)
    expect(store.deliveries.oldestPendingAt()).toBe(NOW + 3_600_000)
  })
})
