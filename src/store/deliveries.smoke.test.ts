import { describe, expect, it } from 'vitest'
import { tempStore } from '../../test/helpers.js'

describe('deliveries smoke', () => {
  it('enqueues, claims and settles one row', () => {
    const { store, cleanup } = tempStore()
    try {
      const now = 1_000_000
      const { id, created } = store.deliveries.enqueue({ channel: 'inbox', dedupKey: 'a', eventType: 't', maxAttempts: 3, nextAttemptAt: now }, now)
      expect(created).toBe(true)
      expect(store.deliveries.enqueue({ channel: 'inbox', dedupKey: 'a', eventType: 't', maxAttempts: 3, nextAttemptAt: now }, now)).toEqual({ id, created: false })
      const claimed = store.deliveries.claimDue({ limit: 10, now, defaultTimeoutMs: 15_000 })
      expect(claimed.map((c) => c.id)).toEqual([id])
      expect(claimed[0]!.attempts).toBe(1)
      expect(store.deliveries.settle([{ id, claimToken: 'wrong', outcome: { kind: 'success' } }], now)).toEqual([{ result: 'missed' }])
      expect(store.deliveries.settle([{ id, claimToken: claimed[0]!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: now, durationMs: 3, statusCode: 200 } }], now)[0]).toMatchObject({ result: 'settled', status: 'success' })
      expect(store.deliveries.attempts(id)).toHaveLength(1)
    } finally {
      cleanup()
    }
  })
})
