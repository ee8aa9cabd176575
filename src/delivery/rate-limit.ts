/**
 * A token bucket per endpoint for `rate_limit` (requests per second). The burst is one
 * second's worth of tokens (at least 1), so a limit of 10/s allows 10 at once, then 1 every 100 ms.
 */
export class TokenBucket {
  private tokens: number
  private last: number

  constructor(
    private rate: number,
    now: number,
  ) {
    this.tokens = this.burst()
    this.last = now
  }

  private burst(): number {
    return Math.max(1, this.rate)
  }

  /** Changes the rate (the endpoint was updated), keeping the tokens already earned. */
  setRate(rate: number): void {
    this.rate = rate
    this.tokens = Math.min(this.tokens, this.burst())
  }

  private refill(now: number): void {
    if (now > this.last) {
      this.tokens = Math.min(this.burst(), this.tokens + ((now - this.last) / 1000) * this.rate)
      this.last = now
    }
  }

  /** Whole tokens available at `now`. */
  available(now: number): number {
    this.refill(now)
    return Math.floor(this.tokens)
  }

  /** Spends `n` tokens (the caller checked `available`). */
  take(n: number, now: number): void {
    this.refill(now)
    this.tokens -= n
  }

  /** Milliseconds until the next whole token, 0 when one is available. */
  waitMs(now: number): number {
    this.refill(now)
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.rate) * 1000)
  }
}
