import type { z } from '@hono/zod-openapi'
import type { Page } from '../lib/cursor.js'
import type { Catalog } from '../apps/catalog.js'
import type { Store } from '../store/index.js'
import type { EventToStore } from './fan-out.js'
import type { PullService } from './pull.js'
import type {
  DeliveryOut as DeliveryOutSchema,
  EndpointCreate as EndpointCreateSchema,
  EndpointOut as EndpointOutSchema,
  EndpointUpdate as EndpointUpdateSchema,
  EventAccepted as EventAcceptedSchema,
  EventItemError as EventItemErrorSchema,
  EventIn as EventInSchema,
  EventOut as EventOutSchema,
  RecoverIn as RecoverInSchema,
  RotateSecretIn as RotateSecretInSchema,
} from './schemas.js'

/** `POST /v1/endpoints` input (snake_case, as the API receives it). */
export type EndpointCreateInput = z.input<typeof EndpointCreateSchema>
/** `PATCH /v1/endpoints/:id` input. */
export type EndpointUpdateInput = z.input<typeof EndpointUpdateSchema>
/** An endpoint as the API returns it. */
export type EndpointOutput = z.infer<typeof EndpointOutSchema>
/** `POST /v1/events` input. */
export type EventInput = z.input<typeof EventInSchema>
/** The answer to one accepted event. */
export type EventAcceptedOutput = z.infer<typeof EventAcceptedSchema>
/** A batch item refused on its own. */
export type EventItemError = z.infer<typeof EventItemErrorSchema>
/** `GET /v1/events/:id` output. */
export type EventOutput = z.infer<typeof EventOutSchema>
/** A delivery as the API returns it (with `attempts` from `deliveries.get`). */
export type DeliveryOutput = z.infer<typeof DeliveryOutSchema>
/** `POST /v1/endpoints/:id/secret/rotate` input. */
export type RotateSecretInput = z.input<typeof RotateSecretInSchema>
/** `POST /v1/endpoints/:id/recover` input. */
export type RecoverInput = z.input<typeof RecoverInSchema>

/** Filters of `GET /v1/deliveries` (snake_case query names). */
export interface DeliveryListFilter {
  status?: 'pending' | 'in_flight' | 'success' | 'dead' | 'cancelled'
  endpoint_id?: string
  event_type?: string
  event_id?: string
  notification_id?: string
  app_id?: string
  /** Created at or after this time (ISO 8601). */
  since?: string
  /** Created before this time (ISO 8601). */
  until?: string
  limit?: number
  cursor?: string | null
}

/** Filters of `events.list`. */
export interface EventListFilter {
  type?: string
  app_id?: string
  limit?: number
  cursor?: string | null
}

/**
 * The caller's application scope: a scoped key's or portal token's application, or null/undefined
 * for a caller of every application (an unscoped key, the library). A scoped caller's writes go to
 * its application whatever the input says, and other applications' rows are 404 to it.
 */
export type AppScope = string | null | undefined

/** An event `events.prepare` checked, ready for `events.sendPrepared` (opaque to callers). */
export type PreparedEvent = EventToStore

/**
 * The webhook service: endpoints, events and their deliveries. Every method validates its
 * input (throwing AppError validation_failed / destination_not_allowed / not_found /
 * not_eligible) and resolves with the API JSON representation.
 */
export interface WebhookService {
  /** Pull endpoints' claim, ack, nack and release (docs/pull-endpoints.md). */
  pull: PullService
  endpoints: {
    /** Creates an endpoint in `input.app_id` (or the scope's application); the result includes its `secret`. */
    create(input: EndpointCreateInput, scope?: AppScope): Promise<EndpointOutput>
    /** Lists endpoints newest first, of one application with `app_id`. */
    list(opts?: { limit?: number; cursor?: string | null; app_id?: string }, scope?: AppScope): Promise<Page<EndpointOutput>>
    /** One endpoint with its health; 404 when unknown, deleted or of another application than the scope's. */
    get(id: string, scope?: AppScope): Promise<EndpointOutput>
    /** Applies a partial update. */
    update(id: string, patch: EndpointUpdateInput, scope?: AppScope): Promise<EndpointOutput>
    /** Soft-deletes the endpoint and cancels its pending deliveries. */
    remove(id: string, scope?: AppScope): Promise<{ deleted: true; cancelled: number }>
    /** The current signing secret. */
    getSecret(id: string, scope?: AppScope): Promise<{ secret: string }>
    /** Rotates the secret; the old one keeps being sent for the grace period. */
    rotateSecret(id: string, input?: RotateSecretInput, scope?: AppScope): Promise<{ secret: string }>
    /** Re-enables a disabled endpoint and resets its health. */
    enable(id: string, scope?: AppScope): Promise<EndpointOutput>
    /** Sends the endpoint's dead deliveries created in `[since, until)` back to pending. */
    recover(id: string, input: RecoverInput, scope?: AppScope): Promise<{ queued: number }>
    /** Sends a `postbox.ping` event (or the catalog example of `event_type`) to this endpoint only. */
    test(id: string, input?: { event_type?: string }, scope?: AppScope): Promise<EventAcceptedOutput>
  }
  events: {
    /**
     * Checks an event as `send` would (shape, application, catalog) without storing it, for
     * `sendPrepared`. The ingest route prepares each event on its own before group commit, so a
     * slow schema never holds another caller's transaction (docs/applications.md, "Schema limits").
     */
    prepare(input: EventInput, scope?: AppScope): Promise<PreparedEvent>
    /** Stores prepared events in ONE transaction; results in input order. */
    sendPrepared(events: readonly PreparedEvent[]): Promise<EventAcceptedOutput[]>
    /** Stores an event and its deliveries in one transaction. */
    send(input: EventInput, scope?: AppScope): Promise<EventAcceptedOutput>
    /** Stores many events in ONE transaction; results in input order (any refused event fails them all). */
    sendMany(inputs: readonly EventInput[], scope?: AppScope): Promise<EventAcceptedOutput[]>
    /**
     * POST /v1/events/batch: one transaction; an item the catalog refuses (schema, archived,
     * unknown type) gets its own `{error}` result and the others are stored.
     */
    sendBatch(inputs: readonly unknown[], scope?: AppScope): Promise<(EventAcceptedOutput | EventItemError)[]>
    /** The event with its deliveries; 404 when unknown. */
    get(id: string, scope?: AppScope): Promise<EventOutput>
    /** Events newest first, optionally of one type (indexed) or application, without their deliveries. */
    list(filter?: EventListFilter, scope?: AppScope): Promise<Page<Omit<EventOutput, 'deliveries'>>>
  }
  deliveries: {
    /** Lists deliveries newest first. */
    list(filter?: DeliveryListFilter, scope?: AppScope): Promise<Page<DeliveryOutput>>
    /** One delivery with its attempts. */
    get(id: string, scope?: AppScope): Promise<DeliveryOutput & { attempts: NonNullable<DeliveryOutput['attempts']> }>
    /** Sends a terminal delivery again (attempts reset, history kept). */
    redeliver(id: string, scope?: AppScope): Promise<{ id: string; status: 'pending' }>
  }
  /** The event-type catalog (docs/applications.md). */
  eventTypes: Catalog
  /**
   * Publishes an operational or notification event to every matching endpoint of `opts.appId`
   * (default `default`), which the caller has checked exists. With `opts.tx` (an open
   * transaction's store) it joins that transaction; otherwise it runs in its own.
   */
  publish(type: string, data: Record<string, unknown>, opts?: { orderingKey?: string | null; id?: string; appId?: string; tx?: Store }): Promise<EventAcceptedOutput>
}
