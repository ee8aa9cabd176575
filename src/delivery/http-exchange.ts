import type { Dispatcher } from 'undici'
import { RESPONSE_BODY_LIMIT } from '../store/deliveries.js'

/** One webhook request, ready for the wire. */
export interface ExchangeRequest {
  origin: string
  path: string
  method: string
  /** Flat `[name, value, name, value, …]`, names lower-case. */
  headers: string[]
  /** null: no body (a GET, or a request stored without one). */
  body: string | null
  timeoutMs: number
}

/** How one request ended. Exactly one of `statusCode` and `error` is set. */
export interface ExchangeResult {
  statusCode: number | null
  /** The first `retry-after` response header, if any. */
  retryAfter: string | null
  /** The response body, cut at 16 KiB. */
  body: string | null
  /** The transport error (connection refused, reset, TLS, the SSRF guard…), or the abort reason. */
  error: unknown
  /** The time limit ran out before the response was complete. */
  timedOut: boolean
  /** `abort()` was called before the response was complete. */
  aborted: boolean
  /** The whole request was written to the socket, so the receiver may have acted on it. */
  requestSent: boolean
}

/** An in-flight exchange: its result, and a way to stop it. */
export interface Exchange {
  result: Promise<ExchangeResult>
  /** Ends the exchange now (shutdown); the result reports `aborted`. */
  abort(reason: Error): void
}

const TIMEOUT = new Error('timeout')
const BODY_LIMIT_REACHED = new Error('response body limit reached')

/**
 * Sends one request through `agent.dispatch` with a callback handler. This replaces
 * `agent.request()` + AbortController + a Readable body on the hot path: the response body is
 * gathered straight from the parser's chunks (at most 16 KiB, then the socket is dropped), and
 * the time limit and shutdown both end the exchange at once, even while the request still waits
 * for a connection (undici does not interrupt a connect in progress; the request is aborted as
 * soon as it reaches a socket, and a late response is discarded).
 */
export function startExchange(agent: Dispatcher, req: ExchangeRequest, limit = RESPONSE_BODY_LIMIT): Exchange {
  let settle!: (r: ExchangeResult) => void
  const result = new Promise<ExchangeResult>((resolve) => (settle = resolve))
  let done = false
  let abortRequest: ((err: Error) => void) | null = null
  let stopReason: Error | null = null
  let requestSent = false
  let statusCode: number | null = null
  let retryAfter: string | null = null
  let chunks: Buffer[] = []
  let size = 0

  const finish = (error: unknown, timedOut: boolean, aborted: boolean): void => {
    if (done) return
    done = true
    clearTimeout(timer)
    let body: string | null = null
    if (error === null && statusCode !== null) {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).subarray(0, limit).toString('utf8')
      // A cut in the middle of a multi-byte character leaves a replacement char; drop it.
      body = size > limit ? text.replace(/\uFFFD$/, '') : text
      // PostgreSQL's text cannot hold a NUL; a receiver's body is kept as U+FFFD in its place (docs/delivery.md).
      if (body.includes('\0')) body = body.replaceAll('\0', '\uFFFD')
    }
    chunks = []
    settle({ statusCode: error === null ? statusCode : null, retryAfter, body, error, timedOut, aborted, requestSent })
  }

  const stop = (reason: Error, timedOut: boolean): void => {
    if (done) return
    stopReason = reason
    // Finish first: undici reports the abort through onError synchronously.
    finish(reason, timedOut, !timedOut)
    abortRequest?.(reason)
  }
  const timer = setTimeout(() => stop(TIMEOUT, true), req.timeoutMs)

  // onRequestSent is part of undici's callback handler (lib/core/request.js) but not of its types.
  const handler: Dispatcher.DispatchHandler & { onRequestSent(): void } = {
    onConnect(abort) {
      abortRequest = abort as (err: Error) => void
      if (stopReason) abort(stopReason)
    },
    onRequestSent() {
      requestSent = true
    },
    onHeaders(status, rawHeaders) {
      if (status < 200) return true // 1xx informational (103 Early Hints): the final answer follows
      statusCode = status
      const raw = rawHeaders as unknown as Buffer[]
      for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i]!
        if (name.length === 11 && retryAfter === null && name.toString('latin1').toLowerCase() === 'retry-after') {
          retryAfter = raw[i + 1]!.toString('latin1')
        }
      }
      return true
    },
    onData(chunk) {
      if (done) return false
      chunks.push(chunk)
      size += chunk.length
      if (size >= limit) {
        // Enough for the attempt log: keep what we have and drop the connection, so a
        // receiver that streams forever cannot hold the slot.
        finish(null, false, false)
        abortRequest?.(BODY_LIMIT_REACHED)
        return false
      }
      return true
    },
    onComplete() {
      finish(null, false, false)
    },
    onError(err) {
      finish(err, false, false)
    },
  }

  try {
    agent.dispatch({ origin: req.origin, path: req.path, method: req.method as Dispatcher.HttpMethod, headers: req.headers, body: req.body ?? null }, handler)
  } catch (err) {
    finish(err, false, false)
  }
  return { result, abort: (reason) => stop(reason, false) }
}

/**
 * The exchanges a sender has in flight, aborted when the signal they were started under aborts
 * (shutdown). One listener per signal (the dispatcher shares one per run) instead of one
 * AbortController per request.
 */
export function createInFlightExchanges(): { run(x: Exchange, signal: AbortSignal): Promise<ExchangeResult> } {
  const inFlight = new Map<Exchange, AbortSignal>()
  const watched = new WeakSet<AbortSignal>()
  const watch = (signal: AbortSignal): void => {
    if (watched.has(signal)) return
    watched.add(signal)
    signal.addEventListener('abort', () => {
      const reason = signal.reason instanceof Error ? signal.reason : new Error('aborted')
      for (const [x, s] of inFlight) if (s === signal) x.abort(reason)
    }, { once: true })
  }
  return {
    async run(x, signal) {
      watch(signal)
      inFlight.set(x, signal)
      try {
        return await x.result
      } finally {
        inFlight.delete(x)
      }
    },
  }
}
