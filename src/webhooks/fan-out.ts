import type { Config } from '../config.js'
import { AppError, errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import { newId } from '../lib/ids.js'
import type { Store } from '../store/index.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { EventRow } from '../store/events.js'
import { maxAttemptsFor } from '../delivery/retry-policy.js'
import { endpointWants } from './matching.js'
import type { EventAcceptedOutput } from './types.js'

/** A validated event ready to store. */
export interface EventToStore {
  type: string
  data: Record<string, unknown>
  clientId?: string | null
  orderingKey?: string | null
  /** When its deliveries become due (a delayed event); absent = now. */
  deliverAt?: number
}

/** At most this many event types keep their list of endpoints between reloads. */
const TYPE_CACHE_SIZE = 1024

/**
 * Stores events and fans each one out into one delivery per enabled, non-deleted endpoint whose
 * filter matches. Must run inside `store.tx` (the caller's transaction), so an accepted event and
 * all its deliveries commit together. The enabled endpoints are cached and reloaded when the
 * endpoints store's settings version moves (not on health changes), so fan-out costs no endpoint
 * query per event.
 */
export function createFanOut(deps: { store: Store; config: Config; clock: Clock }) {
  const { store, config, clock } = deps
  let cached: EndpointRow[] = []
  let cachedVersion = -1
  // The endpoints each event type goes to, worked out once per type (and per reload): with
  // thousands of endpoints, matching every filter for every event cost ~0.45 ms an event.
  const byType = new Map<string, EndpointRow[]>()
  const targetsFor = (type: string): EndpointRow[] => {
    const v = store.endpoints.settingsVersion()
    if (v !== cachedVersion) {
      cached = store.endpoints.active()
      cachedVersion = v
      byType.clear()
    }
    let targets = byType.get(type)
    if (targets === undefined) {
      targets = cached.filter((e) => endpointWants(e.eventTypes, type))
      if (byType.size >= TYPE_CACHE_SIZE) byType.clear()
      byType.set(type, targets)
    }
    return targets
  }

  const accepted = (e: EventRow, deliveries: number, deduplicated: boolean): EventAcceptedOutput => ({
    id: e.id,
    type: e.type,
    deliveries,
    deduplicated,
    created_at: toIso(e.createdAt),
  })

  return {
    /**
     * Stores one event and its deliveries (inside the caller's transaction). A repeated client
     * id returns the original event with `deduplicated: true`. `only` restricts the fan-out to
     * one endpoint regardless of its filter (used by the test ping).
     */
    store(ev: EventToStore, only?: EndpointRow): EventAcceptedOutput {
      if (ev.clientId) {
        const existing = store.events.byClientId(ev.clientId)
        // SPEC §6: a repeat returns the original, whatever it carries now. Never throwing here
        // keeps one client's repeat from failing the other events of a group commit.
        if (existing) return accepted(existing, store.deliveries.byEvent(existing.id).length, true)
      }
      const now = clock.now()
      const id = newId('evt', now)
      const body = JSON.stringify({ id, type: ev.type, timestamp: toIso(now), data: ev.data })
      const row: EventRow = { id, clientId: ev.clientId ?? null, type: ev.type, orderingKey: ev.orderingKey ?? null, body, createdAt: now }
      store.events.insert(row)
      const targets = only ? [only] : targetsFor(ev.type)
      let n = 0
      for (const ep of targets) {
        const r = store.deliveries.enqueue(
          {
            channel: 'webhook',
            eventId: id,
            endpointId: ep.id,
            eventType: ev.type,
            orderingKey: row.orderingKey,
            maxAttempts: maxAttemptsFor(ep.retrySchedule ?? config.retrySchedule),
            nextAttemptAt: ev.deliverAt !== undefined && ev.deliverAt > now ? ev.deliverAt : now,
          },
          now,
        )
        if (r.created) n++
      }
      const out = accepted(row, n, false)
      return ev.deliverAt !== undefined && ev.deliverAt > now ? { ...out, deliver_at: toIso(ev.deliverAt) } : out
    },
    /** Throws 404 unless the endpoint exists; the message says when it was deleted (so enable or recover cannot help). */
    endpointOr404(id: string): EndpointRow {
      const ep = store.endpoints.get(id)
      if (ep) return ep
      if (store.endpoints.getAny(id)) throw new AppError('not_found', 404, `Endpoint ${id} was deleted`)
      throw errors.notFound('Endpoint')
    },
  }
}

/** The fan-out of webhooks/events. */
export type FanOut = ReturnType<typeof createFanOut>
