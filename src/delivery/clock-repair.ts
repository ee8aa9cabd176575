/**
 * Repair after a clock that ran ahead (set to 2031 by mistake, then corrected): retry times,
 * quiet-hours and digest holds and breaker pauses written meanwhile lie years out. Each kind of
 * stored time has a longest legitimate distance from now; anything further was written by a
 * wrong clock and becomes due now.
 */
import type { Config } from '../config.js'
import type { Log } from '../log.js'
import { toIso } from '../lib/clock.js'
import type { Store } from '../store/index.js'
import type { ClockRepairCounts, FutureTimeLimits } from '../store/clock-repair.js'
import { PAUSE_LIMIT_MS } from './breaker.js'
import { MAX_RETRY_DELAY_MS } from './retry-policy.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** The largest jitter factor of `nextRetryDelay` (it draws from [0.8, 1.2)). */
const MAX_JITTER = 1.2
/**
 * The most a local-time window can gain in UTC from a daylight-saving change inside it: 1 h in
 * most zones, 2 h in Antarctica/Troll (UTC+0 to UTC+2), the largest shift in the tz database.
 */
const MAX_DST_SHIFT_MS = 2 * HOUR
/** A weekly digest holds email until the next local Monday 00:00: under 7 local days. */
export const MAX_DIGEST_HOLD_MS = 7 * DAY + MAX_DST_SHIFT_MS
/** Quiet hours hold a send until the window ends: a window is under 24 local hours. */
export const MAX_QUIET_HOLD_MS = DAY + MAX_DST_SHIFT_MS

/** The retry schedules in force: the global webhook one and the notification one. */
export type RetrySchedules = Pick<Config, 'retrySchedule' | 'notificationRetrySchedule'>

/** The longest delay `nextRetryDelay` can give on `schedule`: its largest step jittered up (0 when empty). */
export function maxScheduledDelay(schedule: readonly number[]): number {
  return schedule.length === 0 ? 0 : Math.ceil(Math.max(...schedule) * MAX_JITTER)
}

/**
 * The longest legitimate wait of a pending webhook row: its schedule's longest jittered step, a
 * receiver's Retry-After (capped at MAX_RETRY_DELAY_MS, 24 h, whatever the schedule), or a
 * breaker pause its retries were deferred to.
 */
export function maxWebhookWait(schedule: readonly number[]): number {
  return Math.max(maxScheduledDelay(schedule), MAX_RETRY_DELAY_MS, PAUSE_LIMIT_MS)
}

/**
 * The latest legitimate time of every kind of stored future time at `now` (pure). Webhook rows
 * use their endpoint's own schedule when it has one. Notification rows: the inbox only retries;
 * notify-webhook sends also wait out quiet hours; email also waits for a weekly digest window and
 * then quiet hours (planSend). A breaker pause lasts at most PAUSE_LIMIT_MS (the bound of its settings).
 */
export function futureTimeLimits(
  now: number,
  schedules: RetrySchedules,
  custom: readonly { id: string; schedule: readonly number[] }[] = [],
): FutureTimeLimits {
  const notifyRetry = maxScheduledDelay(schedules.notificationRetrySchedule)
  const endpoints: Record<string, number> = {}
  for (const c of custom) endpoints[c.id] = now + maxWebhookWait(c.schedule)
  return {
    now,
    webhook: now + maxWebhookWait(schedules.retrySchedule),
    endpoints,
    inbox: now + notifyRetry,
    notifyWebhook: now + Math.max(notifyRetry, MAX_QUIET_HOLD_MS),
    email: now + Math.max(notifyRetry, MAX_DIGEST_HOLD_MS + MAX_QUIET_HOLD_MS),
    pause: now + PAUSE_LIMIT_MS,
  }
}

/**
 * Makes due now every pending delivery and ends every breaker pause (with the rows deferred to
 * its end) that lies beyond its latest legitimate time (futureTimeLimits), in one transaction,
 * and logs a warning when it changed anything. Safe to run at any time and from any process:
 * rows within their limits are not touched. Returns the counts.
 *
 * Why due now rather than at the limit: a time past its limit says only that the clock was wrong,
 * not by how much, and the intended time is then most likely already past (a row enqueued
 * "now" in 2031 was meant to go at once; a 1 s retry, a second later). Clamping to the limit
 * would turn every such row into the longest wait of its kind (28.8 h for a webhook, 8 d for an
 * email). Due now costs at most one early attempt: a receiver still failing gets its next retry
 * on the correct clock, and a pause ended early is followed by one half-open probe.
 */
export async function repairFutureTimes(store: Store, schedules: RetrySchedules, now: number, log: Log): Promise<ClockRepairCounts> {
  const limits = futureTimeLimits(now, schedules, await store.clockRepair.customRetrySchedules())
  const counts = await store.clockRepair.clampFutureTimes(limits)
  const { webhookRows, notificationRows, pausedEndpoints, furthest } = counts
  if (webhookRows + notificationRows + pausedEndpoints > 0) {
    // Endpoint caches hold the pauses just ended.
    if (pausedEndpoints > 0) await store.endpoints.invalidate()
    log.warn(
      { webhookRows, notificationRows, pausedEndpoints, furthest: toIso(furthest) },
      'times beyond any legitimate schedule (the clock was ahead when they were written) made due now',
    )
  }
  return counts
}
