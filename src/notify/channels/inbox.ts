import type { Store } from '../../store/index.js'
import type { ClaimedDelivery } from '../../store/deliveries.js'
import type { ChannelResult, ChannelSender } from '../../delivery/channel.js'
import type { Clock, Rng } from '../../lib/clock.js'
import type { Log } from '../../log.js'
import type { InboxStreamHub } from '../inbox-stream.js'
import { publishInboxEvents, writeInboxMessages, type InboxWrite, type WrittenInbox } from '../inbox-write.js'
import { deadWith, readPayload, retryOrDead } from './common.js'

/** Dependencies of the inbox channel. */
export interface InboxChannelDeps {
  store: Store
  hub: InboxStreamHub
  clock: Clock
  rng: Rng
  log: Log
  schedule: readonly number[]
}

interface Waiting {
  delivery: ClaimedDelivery
  write: InboxWrite
  resolve: (r: ChannelResult) => void
}

/**
 * The inbox channel sender, for the inbox rows the dispatcher claims: a redelivered row, and rows
 * enqueued pending (or left in flight) by versions before the accept transaction wrote the inbox
 * itself (pipeline.ts), with their retries. Writes the message through writeInboxMessages, as the
 * accept does (idempotent on the delivery id, so a redeliver writes nothing new), then pushes its
 * stream events to the user's live streams after commit. Group commit: every inbox send started
 * in the same event-loop turn is written in one transaction.
 */
export function createInboxChannel(deps: InboxChannelDeps): ChannelSender {
  const { store, hub, clock, rng, log, schedule } = deps
  let batch: Waiting[] = []

  const flush = async (): Promise<void> => {
    const items = batch
    batch = []
    const started = clock.now()
    let written: WrittenInbox
    try {
      written = await store.tx((s) => writeInboxMessages(s, items.map((w) => w.write), started))
    } catch (err) {
      log.warn({ err, n: items.length }, 'inbox write failed')
      const now = clock.now()
      const attempt = { startedAt: started, durationMs: now - started, error: (err as Error).message }
      for (const w of items) w.resolve(retryOrDead(w.delivery, schedule, now, rng, attempt))
      return
    }
    const durationMs = clock.now() - started
    publishInboxEvents(hub, written)
    for (const w of items) w.resolve({ outcome: { kind: 'success' }, attempt: { startedAt: started, durationMs } })
  }

  return {
    timeoutMs: 5_000,
    send(delivery, signal) {
      if (signal.aborted) return Promise.resolve({ outcome: { kind: 'release' } })
      const p = readPayload(delivery)
      if (!p) return Promise.resolve(deadWith('invalid_payload', clock.now()))
      if (p.recipient.external) return Promise.resolve(deadWith('no_inbox', clock.now()))
      return new Promise<ChannelResult>((resolve) => {
        // flush settles every waiting send itself, on success and on failure: it never rejects.
        if (batch.length === 0) setImmediate(() => void flush())
        batch.push({ delivery, write: { deliveryId: delivery.id, payload: p }, resolve })
      })
    },
  }
}
