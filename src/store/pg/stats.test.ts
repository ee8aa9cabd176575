import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_BACKENDS, addDelivery, addEndpoint, openAdminBackend, type AdminBackend } from '../../../test/support/admin-backends.js'
import { WAITING_IN_ORDER } from '../deliveries.js'

const NOW = Date.UTC(2026, 0, 1)
const MIN = 60_000

describe.each(ADMIN_BACKENDS)('stats store contract (%s)', (name) => {
  let b: AdminBackend
  beforeAll(async () => {
    b = await openAdminBackend(name)
  })
  afterAll(async () => {
    await b?.close()
  })

  it('answers empty on an empty database', async () => {
    expect(await b.stats.oldestPendingCreatedAt()).toBeNull()
    expect(await b.stats.appOldestPendingCreatedAt('default')).toBeNull()
    expect(await b.stats.appNextDueAt('default')).toBeNull()
    expect(await b.stats.endpointHealth()).toEqual([])
    expect(await b.stats.countByAppAndStatus()).toEqual([])
    expect(await b.stats.integrityCheck()).toEqual([])
    await expect(b.stats.probeWritable()).resolves.toBeUndefined()
  })

  it('reports endpoint health, states and queue times', async () => {
    await addEndpoint(b, { id: 'ep_a', disabled: true, pausedUntil: NOW + MIN, pauseCount: 2 })
    await b.run(`UPDATE endpoints SET disabled_reason = 'auto', failures_since_success = 4, last_success_at = ? WHERE id = 'ep_a'`, NOW - MIN)
    await addEndpoint(b, { id: 'ep_b', appId: 'app_x' })
    await addEndpoint(b, { id: 'ep_gone', deletedAt: NOW })
    await addDelivery(b, { id: 'dlv_1', endpointId: 'ep_a', nextAttemptAt: NOW + 3_600_000, createdAt: NOW - 86_400_000 })
    await addDelivery(b, { id: 'dlv_2', endpointId: 'ep_a', nextAttemptAt: NOW, createdAt: NOW })
    await addDelivery(b, { id: 'dlv_3', endpointId: 'ep_a', status: 'success', nextAttemptAt: NOW, createdAt: NOW - 2 * 86_400_000 })
    await addDelivery(b, { id: 'dlv_4', endpointId: 'ep_b', appId: 'app_x', nextAttemptAt: WAITING_IN_ORDER, createdAt: NOW - 5, orderingKey: 'k' })
    await addDelivery(b, { id: 'dlv_5', endpointId: 'ep_b', appId: 'app_x', nextAttemptAt: NOW + 7, createdAt: NOW - 4 })

    expect(await b.stats.endpointHealth()).toEqual([
      { id: 'ep_a', appId: 'default', url: 'https://example.com/ep_a', disabled: true, disabledReason: 'auto', pausedUntil: NOW + MIN, pauseCount: 2, consecutiveFailures: 4, lastSuccessAt: NOW - MIN, pending: 2 },
      { id: 'ep_b', appId: 'app_x', url: 'https://example.com/ep_b', disabled: false, disabledReason: null, pausedUntil: null, pauseCount: 0, consecutiveFailures: 0, lastSuccessAt: null, pending: 2 },
    ])
    expect(await b.stats.endpointHealth(1)).toHaveLength(1)
    expect(await b.stats.appEndpointHealth('app_x')).toEqual([
      { id: 'ep_b', url: 'https://example.com/ep_b', disabled: false, disabledReason: null, pausedUntil: null, pauseCount: 0, consecutiveFailures: 0, lastSuccessAt: null, pending: 2 },
    ])
    expect(await b.stats.endpointStates()).toEqual([
      { id: 'ep_a', disabled: true, disabledReason: 'auto', pausedUntil: NOW + MIN, pauseCount: 2 },
      { id: 'ep_b', disabled: false, disabledReason: null, pausedUntil: null, pauseCount: 0 },
    ])
    expect(await b.stats.oldestPendingCreatedAt()).toBe(NOW - 86_400_000)
    expect(await b.stats.appOldestPendingCreatedAt('app_x')).toBe(NOW - 5)
    // The row waiting for its key's turn is not due at any time.
    expect(await b.stats.appNextDueAt('app_x')).toBe(NOW + 7)
    expect(await b.stats.countByAppAndStatus()).toEqual([
      { appId: 'app_x', status: 'pending', n: 2 },
      { appId: 'default', status: 'pending', n: 2 },
      { appId: 'default', status: 'success', n: 1 },
    ])
  })

  it('counts attempts per time bucket and outcome, for all, one endpoint or one application', async () => {
    const attempt = (delivery: string, startedAt: number, outcome: string, durationMs: number) =>
      b.run(`INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome) VALUES (?, 1, ?, ?, ?)`, delivery, startedAt, durationMs, outcome)
    await attempt('dlv_1', NOW, 'success', 10)
    await attempt('dlv_2', NOW + 1, 'success', 20)
    await attempt('dlv_2', NOW + MIN + 5, 'retry', 30)
    await attempt('dlv_4', NOW + 2 * MIN, 'dead', 40)
    await attempt('dlv_4', NOW + 3 * MIN, 'success', 50) // outside [since, until)
    await attempt('dlv_4', NOW - 1, 'success', 60) // before since
    expect(await b.stats.attemptTimeseries(NOW, NOW + 3 * MIN, MIN)).toEqual([
      { start: NOW, counts: { success: 2 }, durationMs: 30 },
      { start: NOW + MIN, counts: { retry: 1 }, durationMs: 30 },
      { start: NOW + 2 * MIN, counts: { dead: 1 }, durationMs: 40 },
    ])
    expect(await b.stats.attemptTimeseries(NOW, NOW + 3 * MIN, MIN, { endpointId: 'ep_b' })).toEqual([
      { start: NOW, counts: {}, durationMs: 0 },
      { start: NOW + MIN, counts: {}, durationMs: 0 },
      { start: NOW + 2 * MIN, counts: { dead: 1 }, durationMs: 40 },
    ])
    expect(await b.stats.attemptTimeseries(NOW, NOW + 2 * MIN, MIN, { appId: 'default' })).toEqual([
      { start: NOW, counts: { success: 2 }, durationMs: 30 },
      { start: NOW + MIN, counts: { retry: 1 }, durationMs: 30 },
    ])
    expect(await b.stats.attemptTimeseries(NOW, NOW, MIN)).toEqual([])
  })

  it("counts the successes whose attempt is kept in the delivery row with the logged attempts, by the attempt's start", async () => {
    const inRow = (id: string, startedAt: number, durationMs: number, completedAt: number) =>
      b.run(`UPDATE deliveries SET status = 'success', success_started_at = ?, success_duration_ms = ?, completed_at = ? WHERE id = ?`, startedAt, durationMs, completedAt, id)
    await inRow('dlv_3', NOW + 2, 5, NOW + 10) // ep_a, default
    await inRow('dlv_5', NOW + 2 * MIN + 1, 7, NOW + 2 * MIN + 9) // ep_b, app_x
    await addDelivery(b, { id: 'dlv_6', endpointId: 'ep_a', nextAttemptAt: NOW, createdAt: NOW - 10 })
    await inRow('dlv_6', NOW - 3, 1, NOW - 2) // before since
    await addDelivery(b, { id: 'dlv_7', endpointId: 'ep_a', nextAttemptAt: NOW, createdAt: NOW })
    await inRow('dlv_7', NOW + 3 * MIN, 1, NOW + 3 * MIN + 1) // at until
    expect(await b.stats.attemptTimeseries(NOW, NOW + 3 * MIN, MIN)).toEqual([
      { start: NOW, counts: { success: 3 }, durationMs: 35 },
      { start: NOW + MIN, counts: { retry: 1 }, durationMs: 30 },
      { start: NOW + 2 * MIN, counts: { dead: 1, success: 1 }, durationMs: 47 },
    ])
    expect(await b.stats.attemptTimeseries(NOW, NOW + 3 * MIN, MIN, { endpointId: 'ep_b' })).toEqual([
      { start: NOW, counts: {}, durationMs: 0 },
      { start: NOW + MIN, counts: {}, durationMs: 0 },
      { start: NOW + 2 * MIN, counts: { dead: 1, success: 1 }, durationMs: 47 },
    ])
    expect(await b.stats.attemptTimeseries(NOW, NOW + 3 * MIN, MIN, { appId: 'app_x' })).toEqual([
      { start: NOW, counts: {}, durationMs: 0 },
      { start: NOW + MIN, counts: {}, durationMs: 0 },
      { start: NOW + 2 * MIN, counts: { dead: 1, success: 1 }, durationMs: 47 },
    ])
    expect(await b.stats.attemptTimeseries(NOW, NOW + MIN, MIN, { appId: 'default' })).toEqual([{ start: NOW, counts: { success: 3 }, durationMs: 35 }])
  })
})
