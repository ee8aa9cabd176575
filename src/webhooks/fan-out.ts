import type { Config } from '../config.js'
import { AppError, errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import { newId } from '../lib/ids.js'
import type { Store } from '../store/index.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { EventRow } from '../store/events.js'
import type { NewDelivery } from '../store/deliveries.js'
import { maxAttemptsFor } from '../delivery/retry-policy.js'
import { endpointWants } from './matching.js'
import type { EventAcceptedOutput } from './types.js'

/** A validated event ready to store. */
export interface EventToStore {
  /** The application, already checked to exist (`default` when absent). */
  appId?: string
  type: string
  data: Record<string, unknown>
  clientId?: string | null
  orderingKey?: string | null
  /** When its deliveries become due (a delayed event); absent = now. */
  deliverAt?: number
}

/** At most this many event types per application keep their list of endpoints between reloads. */
const TYPE_CACHE_SIZE = 1024
/** At most this many applications keep their endpoints in memory; the oldest loaded goes first. */
const APP_CACHE_SIZE = 20_000

/** One application's enabled endpoints and, per event type, the ones that want it. */
interface AppTargets {
  endpoints: EndpointRow[]
  byType: Map<string, EndpointRow[]>
}

/**
 * Stores events and fans each one out into one delivery per enabled, non-deleted endpoint of the
 * event's application whose filter matches. Runs inside a transaction (the caller's `s`), so an
 * accepted event and all its deliveries commit together. Each application's enabled endpoints
 * are read once (endpoints_app, indexed) and cached until the endpoints store's settings version
 * moves (not on health changes); the version is read once per call (per batch for `storeMany`),
 * so fan-out costs no endpoint query per event, and an event to one of 10,000 applications
 * reads only that application's endpoints.
 */
export function createFanOut(deps: { store: Store; config: Config; clock: Clock }) {
  const { store, config, clock } = deps
  let cachedVersion = -1
  const apps = new Map<string, AppTargets>()

  /** Brings the cache up to date for `appIds`: one version read, one endpoint read per application not cached. */
  const load = async (s: Store, appIds: Iterable<string>): Promise<void> => {
    const v = await s.endpoints.settingsVersion()
    if (v !== cachedVersion) {
      apps.clear()
      cachedVersion = v
    }
    for (const appId of appIds) {
      if (apps.has(appId)) continue
      const endpoints = await s.endpoints.activeForApp(appId)
      // Another call may have loaded it, or moved the version, while this one waited.
      if (cachedVersion !== v || apps.has(appId)) continue
      if (apps.size >= APP_CACHE_SIZE) apps.delete(apps.keys().next().value!)
      apps.set(appId, { endpoints, byType: new Map() })
    }
  }

  // The endpoints each event type goes to, worked out once per (application, type) and reload:
  // with thousands of endpoints, matching every filter for every event cost ~0.45 ms an event.
  // `s` reads the application's endpoints when `load` could not keep them (a version moved meanwhile).
  const targetsFor = async (s: Store, appId: string, type: string): Promise<EndpointRow[]> => {
    const app = apps.get(appId)
    if (app === undefined) return (await s.endpoints.activeForApp(appId)).filter((e) => endpointWants(e.eventTypes, type))
    return cachedTargets(app, type)
  }
  /** targetsFor of an application `load` keeps (synchronous: a batch awaits nothing per event). */
  const cachedTargets = (app: AppTargets, type: string): EndpointRow[] => {
    let targets = app.byType.get(type)
    if (targets === undefined) {
      targets = app.endpoints.filter((e) => endpointWants(e.eventTypes, type))
      if (app.byType.size >= TYPE_CACHE_SIZE) app.byType.clear()
      app.byType.set(type, targets)
    }
    return targets
  }

  /** The answer for a stored event; `createdIso` is toIso(e.createdAt), when the caller has it. */
  const accepted = (e: EventRow, deliveries: number, deduplicated: boolean, createdIso = toIso(e.createdAt)): EventAcceptedOutput => ({
    id: e.id,
    app_id: e.appId,
    type: e.type,
    deliveries,
    deduplicated,
    created_at: createdIso,
  })

  /** One event and its deliveries, the cache already loaded for its application. */
  const storeLoaded = async (s: Store, ev: EventToStore, only?: EndpointRow): Promise<EventAcceptedOutput> => {
    const appId = ev.appId ?? 'default'
    if (ev.clientId) {
      const existing = await s.events.byClientId(appId, ev.clientId)
      // docs/api.md: a repeat returns the original, whatever it carries now. Never throwing here
      // keeps one client's repeat from failing the other events of a group commit.
      if (existing) return accepted(existing, (await s.deliveries.byEvent(existing.id)).length, true)
    }
    const now = clock.now()
    const id = newId('evt', now)
    const body = JSON.stringify({ id, type: ev.type, timestamp: toIso(now), data: ev.data })
    const row: EventRow = { id, appId, clientId: ev.clientId ?? null, type: ev.type, orderingKey: ev.orderingKey ?? null, body, createdAt: now }
    await s.events.insert(row)
    const targets = only ? [only] : await targetsFor(s, appId, ev.type)
    const nextAttemptAt = ev.deliverAt !== undefined && ev.deliverAt > now ? ev.deliverAt : now
    const made = await s.deliveries.enqueueMany(
      targets.map((ep) => ({
        channel: 'webhook' as const,
        eventId: id,
        endpointId: ep.id,
        eventType: ev.type,
        orderingKey: row.orderingKey,
        maxAttempts: maxAttemptsFor(ep.retrySchedule ?? config.retrySchedule),
        nextAttemptAt,
        appId,
      })),
      now,
    )
    const n = made.filter((r) => r.created).length
    const out = accepted(row, n, false)
    return ev.deliverAt !== undefined && ev.deliverAt > now ? { ...out, deliver_at: toIso(ev.deliverAt) } : out
  }

  return {
    /**
     * Stores one event and its deliveries in the transaction `s`. A repeated client id returns
     * the original event with `deduplicated: true`. `only` restricts the fan-out to one endpoint
     * regardless of its filter (used by the test ping).
     */
    async store(s: Store, ev: EventToStore, only?: EndpointRow): Promise<EventAcceptedOutput> {
      if (!only) await load(s, [ev.appId ?? 'default'])
      return storeLoaded(s, ev, only)
    },
    /**
     * Stores every event in the transaction `s`, in order (a later repeat of an earlier client id
     * is deduplicated); results in input order. The batch is written with one `events.insertMany`
     * and one `deliveries.enqueueMany`, after one `events.byClientIds` for the events that carry a
     * client id (on PostgreSQL one round trip each, not two or three per event; on SQLite the same
     * statements per row as `store`). Its events share one clock reading, as they share one commit.
     */
    async storeMany(s: Store, evs: readonly EventToStore[]): Promise<EventAcceptedOutput[]> {
      await load(s, new Set(evs.map((ev) => ev.appId ?? 'default')))
      const now = clock.now()
      // The batch's events share one clock reading, so one timestamp text.
      const nowIso = toIso(now)
      const out: EventAcceptedOutput[] = new Array<EventAcceptedOutput>(evs.length)
      const rows: EventRow[] = []
      /** Per event of `rows`: its index in `evs`, and where its deliveries start in `news`. */
      const slots: { i: number; from: number }[] = []
      const news: NewDelivery[] = []
      /** appId, NUL, client id → the index in `rows` of the batch's first event with it. */
      const firstOf = new Map<string, number>()
      const repeats: [number, number][] = []
      const keys: { appId: string; clientId: string }[] = []
      const seen = new Set<string>()
      for (const ev of evs) {
        const appId = ev.appId ?? 'default'
        if (!ev.clientId || seen.has(`${appId}\0${ev.clientId}`)) continue
        seen.add(`${appId}\0${ev.clientId}`)
        keys.push({ appId, clientId: ev.clientId })
      }
      const stored = new Map<string, EventRow>()
      for (const e of await s.events.byClientIds(keys)) if (e) stored.set(`${e.appId}\0${e.clientId}`, e)
      for (let i = 0; i < evs.length; i++) {
        const ev = evs[i]!
        const appId = ev.appId ?? 'default'
        if (ev.clientId) {
          const key = `${appId}\0${ev.clientId}`
          const earlier = firstOf.get(key)
          if (earlier !== undefined) {
            repeats.push([i, earlier])
            continue
          }
          const existing = stored.get(key)
          // docs/api.md: a repeat returns the original, whatever it carries now (see storeLoaded).
          if (existing) {
            out[i] = accepted(existing, (await s.deliveries.byEvent(existing.id)).length, true)
            continue
          }
          firstOf.set(key, rows.length)
        }
        const id = newId('evt', now)
        const body = JSON.stringify({ id, type: ev.type, timestamp: nowIso, data: ev.data })
        const row: EventRow = { id, appId, clientId: ev.clientId ?? null, type: ev.type, orderingKey: ev.orderingKey ?? null, body, createdAt: now }
        rows.push(row)
        slots.push({ i, from: news.length })
        const app = apps.get(appId)
        for (const ep of app !== undefined ? cachedTargets(app, ev.type) : await targetsFor(s, appId, ev.type)) {
          news.push({
            channel: 'webhook',
            eventId: id,
            endpointId: ep.id,
            eventType: ev.type,
            orderingKey: row.orderingKey,
            maxAttempts: maxAttemptsFor(ep.retrySchedule ?? config.retrySchedule),
            nextAttemptAt: ev.deliverAt !== undefined && ev.deliverAt > now ? ev.deliverAt : now,
            appId,
          })
        }
      }
      await s.events.insertMany(rows)
      const created = await s.deliveries.enqueueMany(news, now)
      const counts: number[] = []
      slots.forEach(({ i, from }, k) => {
        const to = k + 1 < slots.length ? slots[k + 1]!.from : news.length
        let n = 0
        for (let d = from; d < to; d++) if (created[d]!.created) n++
        counts.push(n)
        const ev = evs[i]!
        const o = accepted(rows[k]!, n, false, nowIso)
        out[i] = ev.deliverAt !== undefined && ev.deliverAt > now ? { ...o, deliver_at: toIso(ev.deliverAt) } : o
      })
      for (const [i, k] of repeats) out[i] = accepted(rows[k]!, counts[k]!, true, nowIso)
      return out
    },
    /**
     * Throws 404 unless the endpoint exists and a caller scoped to `scope` (an application) may see
     * it; the message says when it was deleted (so enable or recover cannot help). Another
     * application's endpoint is 404 exactly as an unknown one, so ids cannot be probed. Inside a
     * transaction, pass its store as `s`.
     */
    async endpointOr404(id: string, scope?: string | null, s: Store = store): Promise<EndpointRow> {
      const ep = await s.endpoints.get(id)
      if (ep && (!scope || ep.appId === scope)) return ep
      const any = ep ? null : await s.endpoints.getAny(id)
      if (any && (!scope || any.appId === scope)) throw new AppError('not_found', 404, `Endpoint ${id} was deleted`)
      throw errors.notFound('Endpoint')
    },
  }
}

/** The fan-out of webhooks/events. */
export type FanOut = ReturnType<typeof createFanOut>
