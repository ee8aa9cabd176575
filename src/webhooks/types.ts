import type { z } from '@hono/zod-openapi'
import type { Page } from '../lib/cursor.js'
import type {
  DeliveryOut as DeliveryOutSchema,
  EndpointCreate as EndpointCreateSchema,
  EndpointOut as EndpointOutSchema,
  EndpointUpdate as EndpointUpdateSchema,
  EventAccepted as EventAcceptedSchema,
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
  limit?: number
  cursor?: string | null
}

/** Filters of `events.list`. */
export interface EventListFilter {
  type?: string
  limit?: number
  cursor?: string | null
}

/**
 * The webhook service: endpoints, events and their deliveries. Every method validates its
 * input (throwing AppError validation_failed / destination_not_allowed / not_found /
 * not_eligible) and returns the API JSON representation. Synchronous: SQLite is.
 */
export interface WebhookService {
  endpoints: {
    /** Creates an endpoint; the result includes its `secret`. */
    create(input: EndpointCreateInput): EndpointOutput
    /** Lists endpoints newest first. */
    list(opts?: { limit?: number; cursor?: string | null }): Page<EndpointOutput>
    /** One endpoint with its health; 404 when unknown or deleted. */
    get(id: string): EndpointOutput
    /** Applies a partial update. */
    update(id: string, patch: EndpointUpdateInput): EndpointOutput
    /** Soft-deletes the endpoint and cancels its pending deliveries. */
    remove(id: string): { deleted: true; cancelled: number }
    /** The current signing secret. */
    getSecret(id: string): { secret: string }
    /** Rotates the secret; the old one keeps being sent for the grace period. */
    rotateSecret(id: string, input?: RotateSecretInput): { secret: string }
    /** Re-enables a disabled endpoint and resets its health. */
    enable(id: string): EndpointOutput
    /** Sends the endpoint's dead deliveries created in `[since, until)` back to pending. */
    recover(id: string, input: RecoverInput): { queued: number }
    /** Sends a `postbox.ping` event to this endpoint only. */
    test(id: string): EventAcceptedOutput
  }
  events: {
    /** Stores an event and its deliveries in one transaction. */
    send(input: EventInput): EventAcceptedOutput
    /** Stores many events in ONE transaction; results in input order. */
    sendMany(inputs: readonly EventInput[]): EventAcceptedOutput[]
    /** The event with its deliveries; 404 when unknown. */
    get(id: string): EventOutput
    /** Events newest first, optionally of one type (indexed), without their deliveries. */
    list(filter?: EventListFilter): Page<Omit<EventOutput, 'deliveries'>>
  }
  deliveries: {
    /** Lists deliveries newest first. */
    list(filter?: DeliveryListFilter): Page<DeliveryOutput>
    /** One delivery with its attempts. */
    get(id: string): DeliveryOutput & { attempts: NonNullable<DeliveryOutput['attempts']> }
    /** Sends a terminal delivery again (attempts reset, history kept). */
    redeliver(id: string): { id: string; status: 'pending' }
  }
  /**
   * Publishes an operational or notification event to every matching endpoint. Joins the
   * caller's transaction when called inside `store.tx`.
   */
  publish(type: string, data: Record<string, unknown>, opts?: { orderingKey?: string | null; id?: string }): EventAcceptedOutput
}
