import type { Config } from '../config.js'
import { AppError, errors } from '../errors.js'
import { createCatalog } from '../apps/catalog.js'
import { appFilter, appForWrite, visibleTo } from '../apps/service.js'
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
import { DEFAULT_APP } from '../store/apps.js'
import type { AppScope, EventAcceptedOutput, EventInput, EventItemError, WebhookService } from './types.js'

/** What `createWebhookService` needs. */
export interface WebhookServiceDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
}

/** The event to store in its application, with when its deliveries are due (`deliver_at` / `delay`, docs/requests.md). */
const toStore = (i: EventInput, appId: string, now: number, prefix = ''): EventToStore => {
  const when = i.deliver_at === undefined && i.delay === undefined ? null : resolveDeliverAt(i, now, prefix)
  if (when !== null && 'issues' in when) throw errors.validation(when.issues)
  return {
    appId,
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
  const catalog = createCatalog({ store, config, clock })

  /** Parses, places and checks one event: the zod shape, its application, then the catalog. */
  const prepare = (input: unknown, scope: AppScope, prefix = '', now = clock.now()): EventToStore => {
    const i = parseOrThrow(EventIn, input, prefix)
    const ev = toStore(i, appForWrite(store, scope, i.app_id), now, prefix)
    catalog.check(ev.type, ev.data)
    return ev
  }

  return {
    endpoints: createEndpointService({ store, config, clock, fanOut, catalog }),
    eventTypes: catalog,
    events: {
      send(input, scope) {
        const ev = prepare(input, scope)
        return store.tx(() => fanOut.store(ev))
      },
      sendMany(inputs, scope) {
        const now = clock.now()
        const evs = inputs.map((i, n) => prepare(i, scope, `events.${n}`, now))
        return store.tx(() => evs.map((ev) => fanOut.store(ev)))
      },
      sendBatch(inputs, scope) {
        // The shape and the application of every item first: a malformed batch is refused whole.
        const now = clock.now()
        const parsed = inputs.map((i, n) => {
          const e = parseOrThrow(EventIn, i, `events.${n}`)
          return toStore(e, appForWrite(store, scope, e.app_id), now, `events.${n}`)
        })
        const checked = parsed.map((ev): EventToStore | EventItemError => {
          try {
            catalog.check(ev.type, ev.data)
            return ev
          } catch (err) {
            if (!(err instanceof AppError)) throw err
            return { error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: itemDetails(err.details) } : {}) } }
          }
        })
        return store.tx(() => checked.map((ev): EventAcceptedOutput | EventItemError => ('error' in ev ? ev : fanOut.store(ev))))
      },
      get(id, scope) {
        const e = store.events.get(id) ?? store.events.byClientId(scope || DEFAULT_APP, id)
        if (!e || !visibleTo(scope, e.appId)) throw errors.notFound('Event')
        return eventOut(e, store.deliveries.byEvent(e.id))
      },
      list(f = {}, scope) {
        const appId = appFilter(store, scope, f.app_id)
        const page = store.events.list({ limit: pageSize(f.limit), cursor: f.cursor ?? null, ...(f.type ? { type: f.type } : {}), ...(appId !== undefined ? { appId } : {}) })
        return { data: page.data.map((e) => eventSummary(e)), next_cursor: page.next_cursor }
      },
    },
    deliveries: {
      list(f = {}, scope) {
        const appId = appFilter(store, scope, f.app_id)
        const page = store.deliveries.list({
          ...(appId !== undefined ? { appId } : {}),
          // One application's callers see its webhook deliveries only (docs/applications.md).
          ...(scope ? { channel: 'webhook' as const } : {}),
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
      get(id, scope) {
        const d = store.deliveries.get(id)
        if (!d || !scopedVisible(scope, d)) throw errors.notFound('Delivery')
        return deliveryOut(d, store.deliveries.attempts(id))
      },
      redeliver(id, scope) {
        if (scope) {
          const d = store.deliveries.get(id)
          if (!d || !scopedVisible(scope, d)) throw errors.notFound('Delivery')
        }
        const r = store.tx(() => store.deliveries.redeliver(id, clock.now()))
        if (r === 'not_found') throw errors.notFound('Delivery')
        if (r === 'not_eligible') throw errors.notEligible('Only a delivery in success, dead or cancelled can be redelivered')
        if (r === 'endpoint_unavailable') throw endpointUnavailable(store, id)
        return { id, status: 'pending' }
      },
    },
    publish(type, data, opts = {}) {
      const t = parseOrThrow(PublishedEventType, type, 'type')
      return store.tx(() => fanOut.store({ appId: opts.appId ?? DEFAULT_APP, type: t, data, clientId: opts.id ?? null, orderingKey: opts.orderingKey ?? null }))
    },
  }
}

/** Field issues of a batch item as the API writes them (`{field, message, …}`), as the top-level error's. */
function itemDetails(details: unknown): unknown {
  if (!Array.isArray(details)) return details
  return details.map((d: unknown) => {
    if (typeof d !== 'object' || d === null) return d
    const { path, field, ...rest } = d as { path?: unknown; field?: unknown }
    return { field: typeof field === 'string' ? field : typeof path === 'string' && path !== '' ? path : '(root)', ...rest, in: 'body' }
  })
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

/** True when a caller of `scope` may see the delivery: every row unscoped; else its application's webhook rows only. */
function scopedVisible(scope: AppScope, d: { appId: string; channel: string }): boolean {
  return !scope || (d.appId === scope && d.channel === 'webhook')
}
