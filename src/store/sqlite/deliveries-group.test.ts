import { afterEach, describe, expect, it } from 'vitest'
import { tempSqliteStore } from '../../../test/helpers.js'
import type { SqliteStore } from './index.js'

let t: ReturnType<typeof tempSqliteStore> | undefined
afterEach(() => t?.cleanup())

const T0 = Date.parse('2026-01-16T00:00:00Z')

/** A pending digest member (never claimed) with `maxAttempts`. */
function member(store: SqliteStore, n: number, maxAttempts: number): string {
  const row = { channel: 'email' as const, notificationId: `ntf_${n}`, recipient: 'u1', eventType: 't', payload: '{}', groupKey: 'u1|email|1', maxAttempts, nextAttemptAt: T0 }
  return store.deliveries.enqueue(row, T0).id
}

const sent = { startedAt: T0 + 5, durationMs: 42, statusCode: null, error: null, responseBody: 'sent in the message of dlv_x: 250 OK' }
const failed = { startedAt: T0 + 5, durationMs: 42, statusCode: 451, error: '451 try later', responseBody: 'sent in the message of dlv_x' }

describe('carryGroupMember: a digest member takes the attempt of the message that carried it', () => {
  it('success and dead end the row, count the attempt and log it', () => {
    t = tempSqliteStore()
    const d = t.store.deliveries
    const ok = member(t.store, 1, 6)
    const dead = member(t.store, 2, 6)
    expect(d.carryGroupMember(ok, { kind: 'success' }, sent, T0 + 50)).toBe('success')
    expect(d.carryGroupMember(dead, { kind: 'dead' }, { ...failed, statusCode: 550, error: '550 no' }, T0 + 50)).toBe('dead')
    expect(d.get(ok)).toMatchObject({ status: 'success', attempts: 1, lastError: null, completedAt: T0 + 50 })
    expect(d.get(dead)).toMatchObject({ status: 'dead', attempts: 1, lastStatusCode: 550, lastError: '550 no', completedAt: T0 + 50 })
    expect(d.attempts(ok)).toMatchObject([{ attempt: 1, outcome: 'success', startedAt: T0 + 5, durationMs: 42, statusCode: null, error: null, responseBody: sent.responseBody }])
    expect(d.attempts(dead)).toMatchObject([{ attempt: 1, outcome: 'dead', statusCode: 550, error: '550 no' }])
    // A row no longer pending is left alone, with no attempt logged.
    expect(d.carryGroupMember(ok, { kind: 'dead' }, failed, T0 + 60)).toBeNull()
    expect(d.attempts(ok)).toHaveLength(1)
  })

  it('a retry keeps the row pending until the retry time, or ends it dead when that was its last attempt', () => {
    t = tempSqliteStore()
    const d = t.store.deliveries
    const more = member(t.store, 1, 2)
    const last = member(t.store, 2, 1)
    expect(d.carryGroupMember(more, { kind: 'retry', at: T0 + 1000 }, failed, T0 + 50)).toBe('pending')
    expect(d.get(more)).toMatchObject({ status: 'pending', attempts: 1, nextAttemptAt: T0 + 1000, lastStatusCode: 451, completedAt: null })
    expect(d.attempts(more)).toMatchObject([{ attempt: 1, outcome: 'retry', error: '451 try later' }])
    expect(d.carryGroupMember(last, { kind: 'retry', at: T0 + 1000 }, failed, T0 + 50)).toBe('dead')
    expect(d.get(last)).toMatchObject({ status: 'dead', attempts: 1, completedAt: T0 + 50 })
    expect(d.attempts(last)).toMatchObject([{ attempt: 1, outcome: 'dead' }])
    // The second carried retry spends the first row's last attempt too.
    expect(d.carryGroupMember(more, { kind: 'retry', at: T0 + 2000 }, failed, T0 + 1000)).toBe('dead')
    expect(d.attempts(more).map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retry'],
      [2, 'dead'],
    ])
  })
})
