import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempSqliteStore } from '../../../test/helpers.js'
import { insertEndpoint } from '../../../test/queue-helpers.js'
import type { SqliteStore } from './index.js'
import { CLOCK_REPAIR_SQL } from './clock-repair.js'
import { type FutureTimeLimits } from '../clock-repair.js'
import { WAITING_IN_ORDER, type Channel } from '../deliveries.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const YEAR = 365 * DAY
const NOW = Date.UTC(2026, 10, 30, 12)

// Limits as the policy gives them for the default schedules (delivery/clock-repair.ts), written
// out here so the store is tested on its own: webhook 28.8 h, ep_long ([7d]) 8.4 d, inbox 72 min,
// notify-webhook 26 h, email 8 d 4 h, pause 10 min.
const LIMITS: FutureTimeLimits = {
  now: NOW,
  webhook: NOW + 28.8 * HOUR,
  endpoints: { ep_long: NOW + 8.4 * DAY, ep_short: NOW + DAY },
  inbox: NOW + 72 * MIN,
  notifyWebhook: NOW + 26 * HOUR,
  email: NOW + 8 * DAY + 4 * HOUR,
  pause: NOW + 10 * MIN,
}

let t: ReturnType<typeof tempSqliteStore>
let store: SqliteStore
beforeEach(() => {
  t = tempSqliteStore()
  store = t.store
  for (const id of ['ep_default', 'ep_long', 'ep_short', 'ep_ordered', 'ep_near']) insertEndpoint(store.db, { id, ordered: id === 'ep_ordered' })
  store.db.prepare(`UPDATE endpoints SET retry_schedule = '[1000,604800000]' WHERE id = 'ep_long'`).run()
  store.db.prepare(`UPDATE endpoints SET retry_schedule = '[1000]' WHERE id = 'ep_short'`).run()
})
afterEach(() => t.cleanup())

/** A pending row due at `at` (enqueued at NOW, then moved there as a retry or hold would). */
function pending(key: string, at: number, channel: Channel = 'webhook', endpointId: string | null = 'ep_default', orderingKey: string | null = null): string {
  const { id } = store.deliveries.enqueue(
    { channel, endpointId, notificationId: 'ntf_1', recipient: key, eventType: 't', orderingKey, maxAttempts: 8, nextAttemptAt: NOW },
    NOW,
  )
  if (at !== NOW) store.db.prepare(`UPDATE deliveries SET next_attempt_at = ? WHERE id = ?`).run(at, id)
  return id
}
const nextAt = (id: string): number => store.deliveries.get(id)!.nextAttemptAt
const pausedUntil = (id: string): number | null => store.endpoints.getAny(id)!.pausedUntil

describe('clampFutureTimes', () => {
  it('makes due now only the rows and pauses beyond their limits, and counts them', () => {
    const far = {
      webhook: pending('w-far', NOW + 5 * YEAR),
      webhookJustOver: pending('w-over', NOW + 29 * HOUR),
      longOver: pending('l-over', NOW + 9 * DAY, 'webhook', 'ep_long'),
      shortOver: pending('s-over', NOW + 25 * HOUR, 'webhook', 'ep_short'),
      email: pending('e-far', NOW + 3 * YEAR, 'email', null),
      inbox: pending('i-over', NOW + 2 * HOUR, 'inbox', null),
      notifyWebhook: pending('n-over', NOW + 30 * HOUR, 'notify-webhook', null),
    }
    // Written while the clock read those times (a retry or hold is scheduled from its write).
    for (const id of Object.values(far)) store.db.prepare(`UPDATE deliveries SET updated_at = next_attempt_at WHERE id = ?`).run(id)
    const legit = {
      dayRetry: pending('w-day', NOW + 28 * HOUR),
      // A legitimate long custom schedule: 7 d jittered up to 8.4 d, far beyond the global 28.8 h.
      longRetry: pending('l-ok', NOW + 8 * DAY, 'webhook', 'ep_long'),
      // A weekly digest hold (up to ~7 d) followed by quiet hours.
      weeklyDigest: pending('e-week', NOW + 7 * DAY + 12 * HOUR, 'email', null),
      inboxRetry: pending('i-ok', NOW + HOUR, 'inbox', null),
      quietHours: pending('n-ok', NOW + 25 * HOUR, 'notify-webhook', null),
      due: pending('w-now', NOW),
      // Far out but written with this clock (a schedule shortened since, a clock now behind).
      writtenNow: pending('w-written-now', NOW + 5 * DAY),
    }
    // Waiting for its ordering key's turn (the largest date): not a time, never touched.
    const head = pending('o-1', NOW + 5 * YEAR, 'webhook', 'ep_ordered', 'k')
    store.db.prepare(`UPDATE deliveries SET updated_at = next_attempt_at WHERE id = ?`).run(head)
    const waiting = pending('o-2', NOW, 'webhook', 'ep_ordered', 'k')
    expect(nextAt(waiting)).toBe(WAITING_IN_ORDER)
    // A finished row keeps its last schedule: only pending rows are times still to come.
    const done = pending('w-done', NOW + 4 * YEAR)
    store.db.prepare(`UPDATE deliveries SET status = 'success', completed_at = ? WHERE id = ?`).run(NOW, done)
    store.db.prepare(`UPDATE endpoints SET paused_until = ?, pause_count = 3 WHERE id = 'ep_default'`).run(NOW + 2 * YEAR)
    store.db.prepare(`UPDATE endpoints SET paused_until = ?, pause_count = 1 WHERE id = 'ep_long'`).run(NOW + 5 * MIN)
    // A clock 1 h ahead: a pause too long for a pause, and the row deferred to its end (within
    // the webhook limit on its own) are over now; the endpoint's later retry is not its.
    store.db.prepare(`UPDATE endpoints SET paused_until = ?, pause_count = 1 WHERE id = 'ep_near'`).run(NOW + HOUR)
    const deferred = pending('near-deferred', NOW + HOUR, 'webhook', 'ep_near')
    const nearRetry = pending('near-retry', NOW + 2 * HOUR, 'webhook', 'ep_near')

    const counts = store.clockRepair.clampFutureTimes(LIMITS)

    expect(counts).toEqual({ webhookRows: 6, notificationRows: 3, pausedEndpoints: 2, furthest: NOW + 5 * YEAR })
    expect([nextAt(deferred), nextAt(nearRetry), pausedUntil('ep_near')]).toEqual([NOW, NOW + 2 * HOUR, NOW])
    for (const [name, id] of Object.entries(far)) expect([name, nextAt(id)]).toEqual([name, NOW])
    expect(nextAt(far.webhook) === NOW && store.deliveries.get(far.webhook)!.updatedAt).toBe(NOW)
    const before = { dayRetry: NOW + 28 * HOUR, longRetry: NOW + 8 * DAY, weeklyDigest: NOW + 7 * DAY + 12 * HOUR, inboxRetry: NOW + HOUR, quietHours: NOW + 25 * HOUR, due: NOW, writtenNow: NOW + 5 * DAY }
    for (const [name, id] of Object.entries(legit)) expect([name, nextAt(id)]).toEqual([name, before[name as keyof typeof before]])
    expect(nextAt(waiting)).toBe(WAITING_IN_ORDER)
    expect(store.deliveries.get(done)!.nextAttemptAt).toBe(NOW + 4 * YEAR)
    // The pause ends now; its count stays, so the next delivery is the half-open probe.
    expect(pausedUntil('ep_default')).toBe(NOW)
    expect(store.endpoints.getAny('ep_default')!.pauseCount).toBe(3)
    expect(pausedUntil('ep_long')).toBe(NOW + 5 * MIN)

    // The clamped rows are claimable now (l-over waits out ep_long's legitimate pause); a second
    // run finds nothing.
    const claimed = store.deliveries.claimDue({ limit: 100, now: NOW, defaultTimeoutMs: 1000 }).map((d) => d.recipient)
    expect(claimed.sort()).toEqual(['e-far', 'i-over', 'n-over', 's-over', 'w-far', 'w-now', 'w-over', 'o-1', 'near-deferred'].sort())
    expect(store.clockRepair.clampFutureTimes(LIMITS)).toEqual({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0, furthest: NOW + 8 * DAY })
  })

  it('changes nothing on an empty file or when every time is within its limit', () => {
    expect(store.clockRepair.clampFutureTimes(LIMITS)).toEqual({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0, furthest: null })
    pending('a', LIMITS.webhook)
    pending('b', LIMITS.email, 'email', null)
    store.db.prepare(`UPDATE endpoints SET paused_until = ? WHERE id = 'ep_default'`).run(LIMITS.pause)
    expect(store.clockRepair.clampFutureTimes(LIMITS)).toMatchObject({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0 })
    expect(pausedUntil('ep_default')).toBe(LIMITS.pause)
  })

  it('lists the custom retry schedules of live endpoints', () => {
    store.db.prepare(`UPDATE endpoints SET deleted_at = ? WHERE id = 'ep_short'`).run(NOW)
    expect(store.clockRepair.customRetrySchedules()).toEqual([{ id: 'ep_long', schedule: [1000, 604_800_000] }])
  })
})

describe('clock repair query plans', () => {
  const plan = (sql: string): string => {
    const params: Record<string, number | string> = {}
    for (const [, name] of sql.matchAll(/@(\w+)/g)) params[name!] = name === 'key' ? '#email' : name === 'custom' ? '[]' : 0
    return (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail).join(' | ')
  }

  it('reads only the far tail of the pending indexes, never the whole deliveries table', () => {
    const plans = Object.fromEntries(Object.entries(CLOCK_REPAIR_SQL).map(([name, sql]) => [name, plan(sql)]))
    for (const [name, p] of Object.entries(plans)) expect(`${name}: ${p}`).not.toMatch(/SCAN deliveries\b/)
    expect(plans.webhookRows).toMatch(/SEARCH deliveries USING INDEX deliveries_due \(next_attempt_at>\? AND next_attempt_at<\?\)/)
    expect(plans.keyRows).toMatch(/SEARCH deliveries USING INDEX deliveries_endpoint_due \(<expr>=\? AND next_attempt_at>\? AND next_attempt_at<\?\)/)
    expect(plans.deferredRows).toMatch(/SEARCH deliveries USING INDEX deliveries_endpoint_due \(<expr>=\? AND next_attempt_at=\?\)/)
    expect(plans.furthestRow).toMatch(/SEARCH deliveries USING (COVERING )?INDEX deliveries_due/)
  })
})
