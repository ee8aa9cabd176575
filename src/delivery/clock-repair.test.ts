import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { tempStore } from '../../test/helpers.js'
import { DEFAULTS } from '../config.js'
import { ManualClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import { PAUSE_LIMIT_MS, pauseAfterFailure } from './breaker.js'
import { futureTimeLimits, maxScheduledDelay, maxWebhookWait, repairFutureTimes, MAX_DIGEST_HOLD_MS, MAX_QUIET_HOLD_MS } from './clock-repair.js'
import { MAX_RETRY_DELAY_MS, nextRetryAt } from './retry-policy.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const schedules = { retrySchedule: DEFAULTS.retrySchedule, notificationRetrySchedule: DEFAULTS.notificationRetrySchedule }

describe('futureTimeLimits', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))

  it('gives each kind of stored time its longest legitimate distance from now', () => {
    const now = clock.now()
    const l = futureTimeLimits(now, schedules, [
      { id: 'ep_week', schedule: [1000, 7 * DAY] },
      { id: 'ep_fast', schedule: [1000, 2000] },
      { id: 'ep_none', schedule: [] },
    ])
    expect(l).toEqual({
      now,
      // 24 h, jittered up to 1.2 × 24 h.
      webhook: now + 28.8 * HOUR,
      endpoints: {
        ep_week: now + 8.4 * DAY,
        // A short schedule still allows a receiver's Retry-After, capped at 24 h.
        ep_fast: now + DAY,
        ep_none: now + DAY,
      },
      // 1 h, jittered up.
      inbox: now + 72 * MIN,
      notifyWebhook: now + 26 * HOUR,
      email: now + 8 * DAY + 4 * HOUR,
      // The longest pause any breaker setting allows.
      pause: now + HOUR,
    })
    clock.advance(HOUR)
    expect(futureTimeLimits(clock.now(), schedules).webhook).toBe(now + HOUR + 28.8 * HOUR)
  })

  it('takes a long notification schedule over the holds', () => {
    const l = futureTimeLimits(0, { retrySchedule: [], notificationRetrySchedule: [10 * DAY] })
    expect([l.inbox, l.notifyWebhook, l.email, l.webhook]).toEqual([12 * DAY, 12 * DAY, 12 * DAY, DAY])
    expect(maxScheduledDelay([])).toBe(0)
  })

  it('is never earlier than a retry the retry policy can schedule (any schedule, step, jitter, Retry-After)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 30 * DAY }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 365 * DAY })),
        (schedule, step, r, retryAfter) => {
          const attempt = (step % schedule.length) + 1
          const at = nextRetryAt(0, schedule, attempt, () => r, retryAfter)
          expect(at).not.toBeNull()
          expect(at!).toBeLessThanOrEqual(maxWebhookWait(schedule))
          // Without Retry-After (notification channels), the schedule alone bounds it.
          expect(nextRetryAt(0, schedule, attempt, () => r)!).toBeLessThanOrEqual(maxScheduledDelay(schedule))
        },
      ),
      { numRuns: 500 },
    )
  })

  it('is tight: the largest jitter and the Retry-After cap reach it', () => {
    const almostOne = 1 - Number.EPSILON
    expect(nextRetryAt(0, [DAY], 1, () => almostOne)).toBe(maxWebhookWait([DAY]))
    expect(nextRetryAt(0, [1000], 1, () => 0, 10 * DAY)).toBe(MAX_RETRY_DELAY_MS)
    expect(maxWebhookWait([1000])).toBe(MAX_RETRY_DELAY_MS)
  })

  it('is never earlier than a breaker pause, and the longest pause reaches it', () => {
    // The longest pause any setting allows.
    const policy = { threshold: 80, pauseMs: PAUSE_LIMIT_MS, maxPauseMs: PAUSE_LIMIT_MS }
    for (let pauseCount = 0; pauseCount < 40; pauseCount++) {
      const until = pauseAfterFailure({ recentFailures: 31, recentAttempts: 5, failuresSinceSuccess: 5, failingSince: 0, pausedUntil: null, pauseCount }, 0, policy)
      expect(until).toBe(futureTimeLimits(0, schedules).pause)
    }
    expect(futureTimeLimits(0, schedules).pause).toBe(PAUSE_LIMIT_MS)
    expect(MAX_DIGEST_HOLD_MS + MAX_QUIET_HOLD_MS).toBe(8 * DAY + 4 * HOUR)
  })
})

describe('repairFutureTimes', () => {
  let t: ReturnType<typeof tempStore>
  beforeEach(() => {
    t = tempStore()
  })
  afterEach(() => t.cleanup())

  const NOW = Date.UTC(2026, 10, 30, 12)
  const YEAR = 365 * DAY
  const enqueue = async (key: string, at: number, channel: 'webhook' | 'inbox', endpointId: string | null, writtenAt = NOW): Promise<string> => {
    const { id } = await t.store.deliveries.enqueue({ channel, endpointId, notificationId: 'ntf_1', recipient: key, eventType: 't', maxAttempts: 8, nextAttemptAt: at }, writtenAt)
    return id
  }

  it('makes far-future rows and pauses due now, keeps the rest, and warns only when it changed something', async () => {
    const log = silentLogger()
    const warn = vi.spyOn(log, 'warn')
    await t.store.endpoints.insert(
      {
        id: 'ep_1', url: 'https://example.com/h', description: '', eventTypes: null, headers: {}, method: 'POST', timeoutMs: 15_000,
        maxConcurrency: 16, rateLimit: null, ordered: false, retrySchedule: [1000, 7 * DAY], signature: 'standard', metadata: {},
        secret: 'whsec_x', disabled: false, disabledReason: null,
      },
      NOW,
    )
    // Written while the clock read 2031: a pause and the retries deferred to its end.
    await t.store.endpoints.pause('ep_1', NOW + 5 * YEAR)
    const deferred = await enqueue('a', NOW + 5 * YEAR, 'webhook', 'ep_1')
    const weekRetry = await enqueue('b', NOW + 8 * DAY, 'webhook', 'ep_1')
    const inbox = await enqueue('c', NOW + 5 * YEAR, 'inbox', null, NOW + 5 * YEAR)
    const version = await t.store.endpoints.version()

    expect(await repairFutureTimes(t.store, schedules, NOW, log)).toEqual({ webhookRows: 1, notificationRows: 1, pausedEndpoints: 1, furthest: NOW + 5 * YEAR })
    const after = await Promise.all([deferred, weekRetry, inbox].map((id) => t.store.deliveries.get(id)))
    expect(after.map((d) => d!.nextAttemptAt)).toEqual([NOW, NOW + 8 * DAY, NOW])
    expect((await t.store.endpoints.get('ep_1'))!.pausedUntil).toBe(NOW)
    expect(await t.store.endpoints.version()).not.toBe(version)
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]![0]).toEqual({ webhookRows: 1, notificationRows: 1, pausedEndpoints: 1, furthest: new Date(NOW + 5 * YEAR).toISOString() })

    expect(await repairFutureTimes(t.store, schedules, NOW + MIN, log)).toMatchObject({ webhookRows: 0, notificationRows: 0, pausedEndpoints: 0 })
    expect(warn).toHaveBeenCalledTimes(1)
  })
})
