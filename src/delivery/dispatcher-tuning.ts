/** The dispatcher's batch sizes, windows and waits (dispatcher.ts; docs/delivery.md). */

/** At most this many rows per claim statement; larger batches only add latency to the first send. */
export const CLAIM_BATCH = 128

/** The share of the global cap kept for quiet endpoints (see claimRound). */
export const RESERVE_SHARE = 1 / 8

/** An endpoint with fewer requests than this in flight is quiet and may use the reserve. */
export const QUIET_IN_FLIGHT = 4

/** Outcomes gathered at most this long before one settle transaction (see scheduleFlush). */
export const SETTLE_WINDOW_MS = 2

/** A settle batch this large is written at once. */
export const SETTLE_BATCH = 128

/**
 * A claim that stopped looking before every endpoint had its turn is followed by another this
 * soon, so a row due far round the ring is reached in a few rounds without the claims taking
 * the event loop (each such claim costs up to ~0.7 ms).
 */
export const CUT_SHORT_RETRY_MS = 5

/** After aborting at the deadline, how long stop() waits for senders to report. */
export const ABORT_GRACE_MS = 1000

/** A settle that failed (disk full, database locked past busy_timeout) is tried again this often. */
export const SETTLE_RETRY_MS = 1000
