/** The latest legitimate times, absolute (ms since the epoch), that a repair keeps. */
export interface FutureTimeLimits {
  /** The repair time: what a row or pause beyond its limit becomes. */
  now: number
  /** Webhook rows of endpoints on the global schedule. */
  webhook: number
  /** Webhook rows of endpoints with their own retry schedule, by endpoint id. */
  endpoints: Readonly<Record<string, number>>
  /** Notification rows without an endpoint, by queue channel. */
  inbox: number
  email: number
  notifyWebhook: number
  /** `endpoints.paused_until`. */
  pause: number
}

/** What a repair changed. */
export interface ClockRepairCounts {
  /** Pending webhook rows made due now (those deferred to an ended pause included). */
  webhookRows: number
  /** Pending notification rows (inbox, email, notify-webhook) made due now. */
  notificationRows: number
  /** Endpoints whose breaker pause was ended now. */
  pausedEndpoints: number
  /** The furthest time among the pending rows and pauses before the repair (null when none). */
  furthest: number | null
}

/** Clock repair over the deliveries and endpoints tables. */
export interface ClockRepairStore {
  /**
   * In one IMMEDIATE transaction: every pending row (not waiting in order) due after its limit,
   * and every breaker pause ending after `limits.pause` with the rows deferred to its end,
   * becomes due (ends) at `limits.now`.
   */
  clampFutureTimes(limits: FutureTimeLimits): ClockRepairCounts
  /** Endpoints with their own retry schedule (deleted ones excluded): what their limits come from. */
  customRetrySchedules(): { id: string; schedule: number[] }[]
}
