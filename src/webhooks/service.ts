import type { Config } from '../config.js'
import { errors } from '../errors.js'
import type { Clock, Rng } from '../lib/clock.js'
import { pageSize } from '../lib/cursor.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import { createEndpointService } from './endpoints.js'
import { createFanOut, type EventToStore } from './fan-out.js'
import { deliveryOut, eventOut, eventSummary } from './present.js'
import { parseOrThrow } from './rules.js'
import { resolveDeliverAt } from './deliver-at.js'
import { EventIn, PublishedEventType } from './schemas.js'
import type { EventInput, WebhookService } from './types.js'

/** What `createWebhookService` needs. */
export interface WebhookServiceDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
}

/** The event to store, with when its deliveries are due (`deliver_at` / `delay`, docs/requests.md). */
const toStore = (i: EventInput, now: number, prefix = ''): EventToStore => {
  const when = i.deliver_at === undefined && i.delay === undefined ? null : resolveDeliverAt(i, now, prefix)
  if (when !== null && 'issues' in when) throw errors.validation(when.issues)
  return {
    type: i.type,
    data: i.data,
    clientId: i.id ?? null,
    orderingKey: i.ordering_key ?? null,
    ...(when !== null && when.at > now ? { deliverAt: when.at } : {}),
  }
}

/**
 * Creates the webhook service (endpoints, events, deliveries). Every write is one transaction;
 * `events.sendMany` stores a whole batch in one, and `publish` joins the caller's transaction.
 */
export function createWebhookService(deps: WebhookServiceDeps): WebhookService {
  const { store, config, clock } = deps
  const fanOut = createFanOut({ store, config, clock })

  return {
    endpoints: createEndpointService({ store, config, clock, fanOut }),
    events: {
      send(input) {
        const ev = toStore(parseOrThrow(EventIn, input), clock.now())
        return store.tx(() => fanOut.store(ev))
      },
      sendMany(inputs) {
        const now = clock.now()
        const evs = inputs.map((i, n) => toStore(parseOrThrow(EventIn, i, `events.${n}`), now, `events.${n}`))
        return store.tx(() => evs.map((ev) => fanOut.store(ev)))
      },
      get(id) {
        const e = store.events.get(id) ?? store.events.byClientId(id)
        if (!e) throw errors.notFound('Event')
        return eventOut(e, store.deliveries.byEvent(e.id))
      },
      list(f = {}) {
        const page = store.events.list({ limit: pageSize(f.limit), cursor: f.cursor ?? null, ...(f.type ? { type: f.type } : {}) })
        return { data: page.data.map((e) => eventSummary(e)), next_cursor: page.next_cursor }
      },
    },
    deliveries: {
      list(f = {}) {
        const page = store.deliveries.list({
          ...(f.status ? { status: f.status } : {}),
          ...(f.endpoint_id ? { endpointId: f.endpoint_id } : {}),
          ...(f.event_type ? { eventType: f.event_type } : {}),
          ...(f.event_id ? { eventId: f.event_id } : {}),
          ...(f.notification_id ? { notificationId: f.notification_id } : {}),
          limit: pageSize(f.limit),
          cursor: f.cursor ?? null,
        })
        return { data: page.data.map((d) => deliveryOut(d)), next_cursor: page.next_cursor }
      },
      get(id) {
        const d = store.deliveries.get(id)
        if (!d) throw errors.notFound('Delivery')
        return deliveryOut(d, store.deliveries.attempts(id))
      },
      redeliver(id) {
        const r = store.tx(() => store.deliveries.redeliver(id, clock.now()))
        if (r === 'not_found') throw errors.notFound('Delivery')
        if (r === 'not_eligible') throw errors.notEligible('Only a delivery in success, dead or cancelled can be redelivered')
        if (r === 'endpoint_unavailable') throw endpointUnavailable(store, id)
        return { id, status: 'pending' }
      },
    },
    publish(type, data, opts = {}) {
      const t = parseOrThrow(PublishedEventType, type, 'type')
      return store.tx(() => fanOut.store({ type: t, data, clientId: opts.id ?? null, orderingKey: opts.orderingKey ?? null }))
    },
  }
}

/** The 409 for a delivery whose endpoint cannot take it: a deleted one never can, a disabled one after enable. */
function endpointUnavailable(store: Store, deliveryId: string): Error {
  const endpointId = store.deliveries.get(deliveryId)?.endpointId ?? null
  const ep = endpointId === null ? null : store.endpoints.getAny(endpointId)
  if (ep === null || ep.deletedAt !== null) {
    return errors.notEligible(`Its endpoint${endpointId === null ? '' : ` ${endpointId}`} was deleted; a delivery to a deleted endpoint cannot be redelivered`)
  }
  return errors.notEligible(`Its endpoint ${ep.id} is disabled; enable it first (POST /v1/endpoints/${ep.id}/enable)`)
}
