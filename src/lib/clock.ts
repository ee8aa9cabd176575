/** A source of the current time in epoch milliseconds; injected so schedule math is testable. */
export interface Clock {
  now(): number
}

/** The real wall clock. */
export const systemClock: Clock = { now: () => Date.now() }

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.UTC(2026, 0, 1)) {}
  /** Returns the current manual time. */
  now(): number {
    return this.ms
  }
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void {
    this.ms += ms
  }
  /** Sets the clock to `ms`. */
  set(ms: number): void {
    this.ms = ms
  }
}

/** A random number source in [0, 1); injected so jitter is testable. */
export type Rng = () => number

/** Converts epoch milliseconds to an ISO 8601 string, passing null through. */
export function toIso(ms: number): string
export function toIso(ms: number | null | undefined): string | null
export function toIso(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined) return null
  // A batch formats the same millisecond thousands of times (envelope and response per event).
  if (ms !== lastIsoMs) {
    lastIsoMs = ms
    lastIso = new Date(ms).toISOString()
  }
  return lastIso
}

let lastIsoMs = Number.NaN
let lastIso = ''
