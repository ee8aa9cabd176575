import createClient, { type Client, type ClientOptions } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'
import { startConsumer, type ConsumeHandler, type ConsumeOptions, type Consumer } from './consume-loop.js'

/**
 * The typed client of the Postbox v1 API: openapi-fetch over the types generated from the
 * server's own /openapi.json (`npm run gen:client` writes sdk/client/schema.d.ts), so a call
 * that the server would refuse for its shape does not compile. See docs/inbox-element.md.
 */

export type { components, operations, paths }

/** A Postbox API client: `GET`, `POST`, `PUT`, `PATCH`, `DELETE` typed by path. */
export type PostboxClient = Client<paths>

/** Options of `createPostboxClient`. */
export interface PostboxClientOptions {
  /** The server's origin, e.g. `https://postbox.example.com` (a trailing slash is fine). */
  baseUrl: string
  /** An API key (`pbk_…`), a user token (`pbu_…`, inbox routes) or a portal token (`ptk_…`). */
  token?: string
  /** Another fetch (tests, a proxy); default the global one. */
  fetch?: ClientOptions['fetch']
  /** More headers sent on every request. */
  headers?: Record<string, string>
}

/** Builds a client that sends `Authorization: Bearer <token>` on every request. */
export function createPostboxClient(opts: PostboxClientOptions): PostboxClient {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) }
  if (opts.token !== undefined && opts.token !== '') headers.authorization = `Bearer ${opts.token}`
  return createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    headers,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  })
}

/** The error body every failing Postbox call answers: `{error: {code, message, details?}}`. */
export interface PostboxErrorBody {
  error: { code: string; message: string; details?: unknown }
}

/** An error thrown by `unwrap` for a non-2xx answer, carrying the API's stable `code`. */
export class PostboxApiError extends Error {
  /** The stable snake_case code (`invalid_token`, `not_found`, …), or `network_error`. */
  readonly code: string
  /** The HTTP status (0 when no answer came). */
  readonly status: number
  /** The error's `details`, when the API gave any. */
  readonly details: unknown
  constructor(status: number, body: unknown) {
    const e = (body as Partial<PostboxErrorBody> | undefined)?.error
    super(e?.message ?? `HTTP ${status}`)
    this.name = 'PostboxApiError'
    this.status = status
    this.code = e?.code ?? (status === 0 ? 'network_error' : 'http_error')
    this.details = e?.details
  }
}

/** Returns the `data` of an openapi-fetch result, or throws a PostboxApiError for its error. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const r = await call
  if (r.error !== undefined || !r.response.ok) throw new PostboxApiError(r.response.status, r.error)
  return r.data as T
}

export type { ConsumeHandler, ConsumeOptions, Consumer, PulledDelivery } from './consume-loop.js'

/**
 * Consumes pull endpoint `endpointId` over HTTP with a consumer (or admin) key
 * (docs/pull-endpoints.md): claims with a long poll, acks what the handler resolves, nacks with
 * `retry` and the error's message what it throws; `stop()` releases what was claimed and not started.
 */
export function consume(client: PostboxClient, endpointId: string, handler: ConsumeHandler, opts: ConsumeOptions = {}): Consumer {
  const params = { path: { id: endpointId } }
  return startConsumer(
    {
      claim: async (body, signal) => (await unwrap(client.POST('/v1/endpoints/{id}/claim', { params, body, signal }))).items,
      ack: (items) => unwrap(client.POST('/v1/endpoints/{id}/ack', { params, body: { items } })),
      nack: (items) => unwrap(client.POST('/v1/endpoints/{id}/nack', { params, body: { items } })),
      release: (items) => unwrap(client.POST('/v1/endpoints/{id}/release', { params, body: { items } })),
    },
    handler,
    opts,
  )
}
