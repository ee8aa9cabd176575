import type { Config } from '../config.js'
import { errors } from '../errors.js'
import { createCatalog } from '../apps/catalog.js'
import { appFilter, appForWrite, visibleTo } from '../apps/service.js'
import type { Clock, Rng } from '../lib/clock.js'
import { pageSize } from '../lib/cursor.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import { createEndpointService } from './endpoints.js'
import { createPullService } from './pull.js'
import { createFanOut, type EventToStore } from './fan-out.js'
import { deliveryOut, eventOut, eventSummary } from './present.js'
import { parseOrThrow } from './rules.js'
import { resolveDeliverAt } from './deliver-at.js'
import { EventIn, PublishedEventType } from './schemas.js'
import { DEFAULT_APP } from '../store/apps.js'
import type { AppScope, EventAcceptedOutput, EventInput, EventItemError, WebhookService } from './types.js'
import { cutAtSince, deliveryWindow, readLimit } from './delivery-window.js'

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
 * `events.sendMany` stores a whole batch in one, and `publish` joins the caller's transaction
 * when given its store. The catalog is refreshed once per call, before the transaction.
 */
export function createWebhookService(deps: WebhookServiceDeps): WebhookService {
  const { store, config, clock } = deps
  const fanOut = createFanOut({ store, config, clock })
  const catalog = createCatalog({ store, config, clock })

  /** The zod shape of every input, then its application (one existence read per distinct one). */
  const place = async (inputs: readonly unknown[], scope: AppScope, prefix: (n: number) => string, now: number): Promise<EventToStore[]> => {
    const parsed = inputs.map((input, n) => parseOrThrow(EventIn, input, prefix(n)))
    const apps = new Map<string | undefined, string>()
    for (const i of parsed) if (!apps.has(i.app_id)) apps.set(i.app_id, await appForWrite(store, scope, i.app_id))
    return parsed.map((i, n) => toStore(i, apps.get(i.app_id)!, now, prefix(n)))
  }

  /** The catalog's check of every event: throws the first refusal, in input order. */
  const checkCatalog = async (evs: readonly EventToStore[]): Promise<void> => {
    await catalog.refresh()
    const failed = (await catalog.checkAll(evs)).find((err) => err !== null)
    if (failed) throw failed
  }

  return {
    endpoints: createEndpointService({ store, config, clock, fanOut, catalog }),
    pull: createPullService({ store, config, clock, endpointOr404: (id, scope) => fanOut.endpointOr404(id, scope) }),
    eventTypes: catalog,
    events: {
      async prepare(input, scope) {
        const [ev] = await place([input], scope, () => '', clock.now())
        await checkCatalog([ev!])
        return ev!
      },
      sendPrepared: (evs) => store.tx((s) => fanOut.storeMany(s, evs)),
      async send(input, scope) {
        const [ev] = await place([input], scope, () => '', clock.now())
        await checkCatalog([ev!])
        return store.tx((s) => fanOut.store(s, ev!))
      },
      async sendMany(inputs, scope) {
        const evs = await place(inputs, scope, (n) => `events.${n}`, clock.now())
        await checkCatalog(evs)
        return store.tx((s) => fanOut.storeMany(s, evs))
      },
      async sendBatch(inputs, scope) {
        // The shape and the application of every item first: a malformed batch is refused whole.
        const parsed = await place(inputs, scope, (n) => `events.${n}`, clock.now())
        await catalog.refresh()
        const verdicts = await catalog.checkAll(parsed)
        const checked = parsed.map((ev, n): EventToStore | EventItemError => {
          const err = verdicts[n]
          if (!err) return ev
          return { error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: itemDetails(err.details) } : {}) } }
        })
        const good = checked.filter((ev): ev is EventToStore => !('error' in ev))
        const stored = await store.tx((s) => fanOut.storeMany(s, good))
        let k = 0
        return checked.map((ev): EventAcceptedOutput | EventItemError => ('error' in ev ? ev : stored[k++]!))
      },
      async get(id, scope) {
        const e = (await store.events.get(id)) ?? (await store.events.byClientId(scope || DEFAULT_APP, id))
        if (!e || !visibleTo(scope, e.appId)) throw errors.notFound('Event')
        return eventOut(e, await store.deliveries.byEvent(e.id))
      },
      async list(f = {}, scope) {
        const appId = await appFilter(store, scope, f.app_id)
        const page = await store.events.list({ limit: pageSize(f.limit), cursor: f.cursor ?? null, ...(f.type ? { type: f.type } : {}), ...(appId !== undefined ? { appId } : {}) })
        return { data: page.data.map((e) => eventSummary(e)), next_cursor: page.next_cursor }
      },
    },
    deliveries: {
      async list(f = {}, scope) {
        const appId = await appFilter(store, scope, f.app_id)
        const span = deliveryWindow(f)
        const page = await store.deliveries.list({
          ...(appId !== undefined ? { appId } : {}),
          // One application's callers see its webhook deliveries only (docs/applications.md).
          ...(scope ? { channel: 'webhook' as const } : {}),
          ...(f.status ? { status: f.status } : {}),
          ...(f.endpoint_id ? { endpointId: f.endpoint_id } : {}),
          ...(f.event_type ? { eventType: f.event_type } : {}),
          ...(f.event_id ? { eventId: f.event_id } : {}),
          ...(f.notification_id ? { notificationId: f.notification_id } : {}),
          limit: readLimit(span, pageSize(f.limit)),
          cursor: span.cursor,
        })
        return cutAtSince({ data: page.data.map((d) => deliveryOut(d)), next_cursor: page.next_cursor }, span, pageSize(f.limit))
      },
      async get(id, scope) {
        const d = await store.deliveries.get(id)
        if (!d || !scopedVisible(scope, d)) throw errors.notFound('Delivery')
        return deliveryOut(d, await store.deliveries.attempts(id))
      },
      async redeliver(id, scope) {
        const r = await store.tx(async (s) => {
          if (scope) {
            const d = await s.deliveries.get(id)
            if (!d || !scopedVisible(scope, d)) throw errors.notFound('Delivery')
          }
          return s.deliveries.redeliver(id, clock.now())
        })
        if (r === 'not_found') throw errors.notFound('Delivery')
        if (r === 'not_eligible') throw errors.notEligible('Only a delivery in success, dead or cancelled can be redelivered')
        if (r === 'endpoint_unavailable') throw await endpointUnavailable(store, id)
        return { id, status: 'pending' }
      },
    },
    async publish(type, data, opts = {}) {
      const t = parseOrThrow(PublishedEventType, type, 'type')
      const ev: EventToStore = { appId: opts.appId ?? DEFAULT_APP, type: t, data, clientId: opts.id ?? null, orderingKey: opts.orderingKey ?? null }
      return opts.tx ? fanOut.store(opts.tx, ev) : store.tx((s) => fanOut.store(s, ev))
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
async function endpointUnavailable(store: Store, deliveryId: string): Promise<Error> {
  const endpointId = (await store.deliveries.get(deliveryId))?.endpointId ?? null
  const ep = endpointId === null ? null : await store.endpoints.getAny(endpointId)
  if (ep === null || ep.deletedAt !== null) {
    return errors.notEligible(`Its endpoint${endpointId === null ? '' : ` ${endpointId}`} was deleted; a delivery to a deleted endpoint cannot be redelivered`)
  }
  return errors.notEligible(`Its endpoint ${ep.id} is disabled; enable it first (POST /v1/endpoints/${ep.id}/enable)`)
}

/** True when a caller of `scope` may see the delivery: every row unscoped; else its application's webhook rows only. */
function scopedVisible(scope: AppScope, d: { appId: string; channel: string }): boolean {
  return !scope || (d.appId === scope && d.channel === 'webhook')
}
