/**
 * The consumer loop of a pull endpoint (docs/pull-endpoints.md), over any transport: the typed
 * client's `consume()` runs it over HTTP, the library's `pb.consume()` in-process. It claims as
 * many deliveries as it has free slots, runs the handler on each, acks what resolves and nacks
 * (`retry`, with the error's message) what throws. `stop()` ends the long poll, releases what was
 * claimed and not started, and resolves once every started handler has settled.
 */

/** One claimed delivery, as the claim route answers it. */
export interface PulledDelivery {
  delivery_id: string
  claim_token: string
  attempt: number
  lease_until: string
  ordering_key: string | null
  event: { id: string; type: string; timestamp: string; data?: unknown } | null
}

/** A settle item: the delivery and the token of its claim. */
export interface PullToken {
  delivery_id: string
  claim_token: string
}

/** What the loop needs from a transport. */
export interface PullTransport {
  /** Claims up to `max` deliveries, long-polling up to `wait`; `signal` ends the wait early. */
  claim(body: { max: number; visibility?: string; wait: string }, signal: AbortSignal): Promise<PulledDelivery[]>
  ack(items: PullToken[]): Promise<unknown>
  nack(items: (PullToken & { outcome: 'retry'; error: string })[]): Promise<unknown>
  release(items: PullToken[]): Promise<unknown>
}

/** A handler: resolve to ack, throw to nack with `retry` and the error's message. */
export type ConsumeHandler = (event: NonNullable<PulledDelivery['event']>, delivery: PulledDelivery) => unknown

/** Options of a consumer loop. */
export interface ConsumeOptions {
  /** Deliveries handled at once (default 1). */
  concurrency?: number
  /** The lease of each claim, such as `30s` (the server's default when absent). */
  visibility?: string
  /** The long poll of each claim (default `20s`, the most the server allows). */
  wait?: string
  /** Called with an error of the transport (a claim or settle that failed); the loop goes on after `retryMs`. */
  onError?: (err: unknown) => void
  /** The pause after a failed claim, in ms (default 1000). */
  retryMs?: number
}

/** A running consumer loop. */
export interface Consumer {
  /** Stops claiming, releases what was claimed and not started, and waits for running handlers. */
  stop(): Promise<void>
  /** Resolves when the loop has ended (after `stop`). */
  readonly done: Promise<void>
}

/** The message a nack carries for a thrown value (at most 2,000 characters, as the API allows). */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 2000) || 'error'

/** Starts a consumer loop over `transport`. */
export function startConsumer(transport: PullTransport, handler: ConsumeHandler, opts: ConsumeOptions = {}): Consumer {
  const concurrency = Math.max(1, Math.floor(opts.concurrency ?? 1))
  const wait = opts.wait ?? '20s'
  const abort = new AbortController()
  const running = new Set<Promise<void>>()
  let stopping = false
  let slotFreed: (() => void) | null = null

  const report = (err: unknown): void => opts.onError?.(err)
  const run = (d: PulledDelivery): void => {
    const token = { delivery_id: d.delivery_id, claim_token: d.claim_token }
    const p = (async () => {
      try {
        if (d.event === null) throw new Error('event_missing')
        await handler(d.event, d)
        await transport.ack([token]).catch(report)
      } catch (err) {
        await transport.nack([{ ...token, outcome: 'retry', error: errorText(err) }]).catch(report)
      }
    })().finally(() => {
      running.delete(p)
      slotFreed?.()
    })
    running.add(p)
  }

  const loop = async (): Promise<void> => {
    while (!stopping) {
      if (running.size >= concurrency) {
        await new Promise<void>((resolve) => (slotFreed = resolve))
        slotFreed = null
        continue
      }
      let claimed: PulledDelivery[]
      try {
        const body = { max: concurrency - running.size, wait, ...(opts.visibility !== undefined ? { visibility: opts.visibility } : {}) }
        claimed = await transport.claim(body, abort.signal)
      } catch (err) {
        if (stopping) break
        report(err)
        await new Promise((resolve) => setTimeout(resolve, opts.retryMs ?? 1000))
        continue
      }
      if (stopping) {
        // Claimed while stopping: never started, so given back with the attempt refunded.
        if (claimed.length > 0) await transport.release(claimed.map((d) => ({ delivery_id: d.delivery_id, claim_token: d.claim_token }))).catch(report)
        break
      }
      for (const d of claimed) run(d)
    }
    await Promise.all(running)
  }
  const done = loop()
  return {
    done,
    async stop() {
      stopping = true
      abort.abort()
      slotFreed?.()
      await done
    },
  }
}
