import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_BACKENDS, addDelivery, addEndpoint, openAdminBackend, type AdminBackend } from '../../../test/support/admin-backends.js'
import type { FutureTimeLimits } from '../clock-repair.js'
import { WAITING_IN_ORDER } from '../deliveries.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const YEAR = 365 * DAY
const NOW = Date.UTC(2026, 10, 30, 12)

// As src/store/clock-repair.test.ts: the policy's limits for the default schedules, written out.
const LIMITS: FutureTimeLimits = {
  now: NOW,
  webhook: NOW + 28.8 * HOUR,
  endpoints: { ep_long: NOW + 8.4 * DAY, ep_short: NOW + DAY },
  inbox: NOW + 72 * MIN,
  notifyWebhook: NOW + 26 * HOUR,
  email: NOW + 8 * DAY + 4 * HOUR,
  pause: NOW + 10 * MIN,
}

describe.each(ADMIN_BACKENDS)('clock repair store contract (%s)', (name) => {
  let b: AdminBackend
  let n = 0
  beforeEach(async () => {
    b = await openAdminBackend(name)
    for (const id of ['ep_default', 'ep_long', 'ep_short', 'ep_ordered', 'ep_near']) await addEndpoint(b, { id, ordered: id === 'ep_ordered' })
    await b.run(`UPDATE endpoints SET retry_schedule = '[1000,604800000]' WHERE id = 'ep_long'`)
    await b.run(`UPDATE endpoints SET retry_schedule = '[1000]' WHERE id = 'ep_short'`)
  })
  afterEach(async () => {
    await b?.close()
  })

  /** A pending row due at `at`, last written at `writtenAt` (NOW unless the clock read `at` then). */
  const pending = async (at: number, channel = 'webhook', endpointId: string | null = 'ep_default', writtenAt = NOW, orderingKey: string | null = null): Promise<string> => {
    const id = `dlv_${String(++n).padStart(4, '0')}`
    await addDelivery(b, { id, channel, endpointId, nextAttemptAt: at, createdAt: NOW, updatedAt: writtenAt, orderingKey })
    return id
  }
  const nextAt = async (id: string): Promise<number> => (await b.all<{ t: number }>(`SELECT next_attempt_at AS t FROM deliveries WHERE id = ?`, id))[0]!.t
  const pausedUntil = async (id: string): Promise<number | null> => (await b.all<{ t: number | null }>(`SELECT paused_until AS t FROM endpoints WHERE id = ?`, id))[0]!.t

  it('makes due now only the rows and pauses beyond their limits, and counts them', async () => {
    const farAt = {
      webhook: [NOW + 5 * YEAR, 'webhook', 'ep_default'],
      webhookJustOver: [NOW + 29 * HOUR, 'webhook', 'ep_default'],
      longOver: [NOW + 9 * DAY, 'webhook', 'ep_long'],
      shortOver: [NOW + 25 * HOUR, 'webhook', 'ep_short'],
      email: [NOW + 3 * YEAR, 'email', null],
      inbox: [NOW + 2 * HOUR, 'inbox', null],
      notifyWebhook: [NOW + 30 * HOUR, 'notify-webhook', null],
    } as const
    const far: Record<string, string> = {}
    for (const [k, [at, ch, ep]] of Object.entries(farAt)) far[k] = await pending(at, ch, ep, at)
    const legitAt = {
      dayRetry: [NOW + 28 * HOUR, 'webhook', 'ep_default'],
      longRetry: [NOW + 8 * DAY, 'webhook', 'ep_long'],
      weeklyDigest: [NOW + 7 * DAY + 12 * HOUR, 'email', null],
      inboxRetry: [NOW + HOUR, 'inbox', null],
      quietHours: [NOW + 25 * HOUR, 'notify-webhook', null],
      due: [NOW, 'webhook', 'ep_default'],
      writtenNow: [NOW + 5 * DAY, 'webhook', 'ep_default'],
    } as const
    const legit: Record<string, string> = {}
    for (const [k, [at, ch, ep]] of Object.entries(legitAt)) legit[k] = await pending(at, ch, ep)
    const head = await pending(NOW + 5 * YEAR, 'webhook', 'ep_ordered', NOW + 5 * YEAR, 'k')
    const waiting = await pending(WAITING_IN_ORDER, 'webhook', 'ep_ordered', NOW, 'k')
    const done = await pending(NOW + 4 * YEAR)
    await b.run(`UPDATE deliveries SET status = 'success', completed_at = ? WHERE id = ?`, NOW, done)
    await b.run(`UPDATE endpoints SET paused_until = ?, pause_count = 3 WHERE id = 'ep_default'`, NOW + 2 * YEAR)
    await b.run(`UPDATE endpoints SET paused_until = ?, pause_count = 1 WHERE id = 'ep_long'`, NOW + 5 * MIN)
    await b.run(`UPDATE endpoints SET paused_until = ?, pause_count = 1 WHERE id = 'ep_near'`, NOW + HOUR)
    const deferred = await pending(NOW + HOUR, 'webhook', 'ep_near')
    const nearRetry = await pending(NOW + 2 * HOUR, 'webhook', 'ep_near')

    const counts = await b.clockRepair.clampFutureTimes(LIMITS)

    expect(counts).toEqual({ webhookRows: 6, notificationRows: 3, pausedEndpoints: 2, furthest: NOW + 5 * YEAR })
    expect([await nextAt(deferred), await nextAt(nearRetry), await pausedUntil('ep_near')]).toEqual([NOW, NOW + 2 * HOUR, NOW])
    for (const [k, id] of Object.entries(far)) expect([k, await nextAt(id)]).toEqual([k, NOW])
    expect(await b.all(`SELECT updated_at AS u FROM deliveries WHERE id = ?`, far.webhook)).toEqual([{ u: NOW }])
    for (const [k, id] of Object.entries(legit)) expect([k, await nextAt(id)]).toEqual([k, legitAt[k as keyof typeof legitAt][0]])
    expect(await nextAt(head)).toBe(NOW)
    expect(await nextAt(waiting)).toBe(WAITING_IN_ORDER)
    expect(await nextAt(done)).toBe(NOW + 4 * YEAR)
    expect(await pausedUntil('ep_default')).toBe(NOW)
    expect(await b.all(`SELECT pause_count AS c FROM endpoints WHERE id = 'ep_default'`)).toEqual([{ c: 3 }])
    expect(await pausedUntil('ep_long')).toBe(NOW + 5 * MIN)
    expect(await b.clockRepair.clampFutureTimes(LIMITS)).toEqual({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0, furthest: NOW + 8 * DAY })
  })

  it('changes nothing on an empty database or when every time is within its limit', async () => {
    expect(await b.clockRepair.clampFutureTimes(LIMITS)).toEqual({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0, furthest: null })
    await pending(LIMITS.webhook, 'webhook', 'ep_default', LIMITS.webhook)
    await pending(LIMITS.email, 'email', null, LIMITS.email)
    await b.run(`UPDATE endpoints SET paused_until = ? WHERE id = 'ep_default'`, LIMITS.pause)
    expect(await b.clockRepair.clampFutureTimes(LIMITS)).toEqual({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0, furthest: LIMITS.email })
    expect(await pausedUntil('ep_default')).toBe(LIMITS.pause)
  })

  it('lists the custom retry schedules of live endpoints', async () => {
    await b.run(`UPDATE endpoints SET deleted_at = ? WHERE id = 'ep_short'`, NOW)
    expect(await b.clockRepair.customRetrySchedules()).toEqual([{ id: 'ep_long', schedule: [1000, 604_800_000] }])
  })

  it('two repairs at once move each row once', async () => {
    for (let i = 0; i < 20; i++) await pending(NOW + 5 * YEAR, 'webhook', 'ep_default', NOW + 5 * YEAR)
    const [a, c] = await Promise.all([b.clockRepair.clampFutureTimes(LIMITS), b.clockRepair.clampFutureTimes(LIMITS)])
    expect(a.webhookRows + c.webhookRows).toBe(20)
  })
})
