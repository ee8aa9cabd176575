import { MAX_RETRY_DELAY_MS } from './retry-policy.js'

/** What an HTTP response or transport error means for the delivery (docs/delivery.md, "Responses and retries"). */
export type Classification =
  | { kind: 'success' }
  | { kind: 'retry'; error: string; retryAfterMs: number | null; breakerFailure: boolean }
  | { kind: 'dead'; error: string; disable: 'gone' | null }

/**
 * Parses a Retry-After header (delta seconds or an HTTP date) into milliseconds from `now`,
 * capped at 24 h; null when absent or unparseable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value === null || value === undefined) return null
  const text = value.trim()
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_DELAY_MS)
  if (!/[a-z]/i.test(text)) return null
  const at = Date.parse(text)
  if (Number.isNaN(at)) return null
  return Math.min(Math.max(0, at - now), MAX_RETRY_DELAY_MS)
}

/** Classifies an HTTP status; `retryAfter` is the raw header, honoured on 429 and 503. */
export function classifyResponse(status: number, retryAfter: string | null, now: number): Classification {
  if (status >= 200 && status < 300) return { kind: 'success' }
  if (status === 410) return { kind: 'dead', error: 'gone', disable: 'gone' }
  if (status === 408 || status === 425 || status === 429 || (status >= 500 && status < 600)) {
    const honour = status === 429 || status === 503
    return {
      kind: 'retry',
      error: `http_${status}`,
      retryAfterMs: honour ? parseRetryAfter(retryAfter, now) : null,
      breakerFailure: status >= 500,
    }
  }
  if (status >= 300 && status < 400) return { kind: 'dead', error: 'redirect_not_followed', disable: null }
  return { kind: 'dead', error: `http_${status}`, disable: null }
}

/** Classifies a transport failure: refused destinations are permanent, everything else retries. */
export function classifyTransportError(code: string): Classification {
  if (code === 'destination_not_allowed') return { kind: 'dead', error: code, disable: null }
  return { kind: 'retry', error: code, retryAfterMs: null, breakerFailure: true }
}
