import type { z } from '@hono/zod-openapi'
import type { Config } from '../config.js'
import { errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import { pageSize, type Page } from '../lib/cursor.js'
import { originKey, WAITING_IN_ORDER, type Attempt, type DeliveryStatus } from '../store/deliveries.js'
import type { Store } from '../store/index.js'
import { deliveryIdOf, type RequestRow } from '../store/requests.js'
import { maxAttemptsFor } from '../delivery/retry-policy.js'
import { resolveDeliverAt } from './deliver-at.js'
import { attemptOut } from './present.js'
import { RequestIn as RequestInSchema, type RequestAccepted, type RequestIn, type RequestOut } from './request-schemas.js'
import { checkUrl, headerIssues, parseOrThrow, parseRetrySchedule, throwIfIssues, urlPolicy, type Issue } from './rules.js'
import { normaliseSecret } from './secrets.js'

/** `POST /v1/requests` input (snake_case, as the API receives it). */
export type RequestInput = z.input<typeof RequestIn>
/** A request as the API returns it. */
export type RequestOutput = z.infer<typeof RequestOut>
/** The answer to `POST /v1/requests`. */
export type RequestAcceptedOutput = z.infer<typeof RequestAccepted>

/** Filters of `requests.list` (snake_case query names). */
export interface RequestListFilter {
  status?: DeliveryStatus
  source?: string
  ref_id?: string
  app_id?: string
  limit?: number
  cursor?: string | null
}

/** Durable HTTP requests (docs/requests.md): create, list, get, redeliver, cancel. */
export interface RequestService {
  /**
   * Validates and enqueues a request (one transaction). `appId` is the application it belongs to
   * as the caller's scope decided it (the API's appForWrite); default the body's `app_id`, else
   * `default`. A repeat of `(app, dedup_key)` returns the original with `deduplicated: true`.
   * With `tx` (an open transaction's store) it joins that transaction instead of opening one.
   */
  create(input: unknown, opts?: { appId?: string; tx?: Store }): Promise<RequestAcceptedOutput>
  list(f?: RequestListFilter): Promise<Page<RequestOutput>>
  /** The request with every attempt; 404 when unknown. */
  get(id: string): Promise<RequestOutput & { attempts: NonNullable<RequestOutput['attempts']> }>
  /** Sends a finished request again (attempts reset, history kept); 404, or 409 `not_eligible` while it is queued. */
  redeliver(id: string): Promise<{ id: string; status: 'pending' }>
  /** Cancels a pending request; 404, or 409 `not_eligible` once it is in flight or finished. */
  cancel(id: string): Promise<RequestOutput>
}

/** What a content-type value may hold (as custom header values). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/** A stored request as the API shows it (the signing secret never leaves the store). */
export function requestOut(r: RequestRow, attempts?: readonly Attempt[]): RequestOutput {
  const d = r.delivery
  return {
    id: r.id,
    app_id: r.appId,
    delivery_id: d.id,
    method: r.method as RequestOutput['method'],
    url: r.url,
    headers: r.headers,
    body: r.body === null ? null : r.bodyJson ? (JSON.parse(r.body) as unknown) : r.body,
    signed: r.signingSecret !== null,
    source: r.source,
    ref_id: r.refId,
    dedup_key: r.dedupKey,
    timeout_ms: r.timeoutMs,
    retry_schedule: r.retrySchedule,
    status: d.status,
    attempt_count: d.attempts,
    max_attempts: d.maxAttempts,
    next_attempt_at: d.status === 'pending' && d.nextAttemptAt < WAITING_IN_ORDER ? toIso(d.nextAttemptAt) : null,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    deliver_at: toIso(r.deliverAt),
    created_at: toIso(r.createdAt),
    completed_at: toIso(d.completedAt),
    ...(attempts ? { attempts: attempts.map(attemptOut) } : {}),
  }
}

/** The body to store and whether it is JSON; issues when a value cannot be sent. */
function encodeBody(body: unknown): { body: string | null; json: boolean } | { issue: Issue } {
  if (body === undefined) return { body: null, json: false }
  if (typeof body === 'string') return { body, json: false }
  let text: string | undefined
  try {
    text = JSON.stringify(body)
  } catch {
    text = undefined
  }
  return text === undefined ? { issue: { path: 'body', message: 'must be a string or a JSON value' } } : { body: text, json: true }
}

/** Creates the request service over the store. */
export function createRequestService(deps: { store: Store; config: Config; clock: Clock }): RequestService {
  const { store, config, clock } = deps
  const policy = urlPolicy(config.allowNetworks)

  const rowOr404 = async (id: string, s: Store = store): Promise<RequestRow> => {
    const did = deliveryIdOf(id)
    const row = did === null ? null : await s.requests.get(did)
    if (!row) throw errors.notFound('Request')
    return row
  }

  return {
    async create(input, opts = {}) {
      const v = parseOrThrow(RequestInSchema, input)
      const url = checkUrl(v.url, policy)
      const method = v.method ?? 'POST'
      const issues: Issue[] = []
      const headers = v.headers ?? {}
      const custom: Record<string, string> = {}
      const contentTypes: string[] = []
      for (const [k, val] of Object.entries(headers)) {
        if (k.toLowerCase() === 'content-type') contentTypes.push(k)
        else custom[k] = val
      }
      issues.push(...headerIssues(custom))
      const encoded = encodeBody(v.body)
      if ('issue' in encoded) issues.push(encoded.issue)
      else {
        if (method === 'GET' && encoded.body !== null) issues.push({ path: 'body', message: 'a GET request carries no body' })
        if (contentTypes.length > 1) issues.push({ path: 'headers', message: 'content-type given more than once' })
        for (const k of contentTypes) {
          if (encoded.body === null) issues.push({ path: `headers.${k}`, message: 'content-type needs a body' })
          else if (encoded.json) issues.push({ path: `headers.${k}`, message: 'a JSON body is sent as application/json; send a string body to choose another content-type' })
          else if (!FIELD_VALUE.test(headers[k]!) || headers[k]!.length === 0) issues.push({ path: `headers.${k}`, message: 'must be a non-empty header value' })
        }
      }
      let schedule: number[] | null = null
      if (v.retry_schedule) {
        const r = parseRetrySchedule(v.retry_schedule)
        if ('issues' in r) issues.push(...r.issues)
        else schedule = r.schedule
      }
      let secret: string | null = null
      if (v.signing_secret !== undefined) {
        const r = normaliseSecret('standard', v.signing_secret)
        if ('error' in r) issues.push({ path: 'signing_secret', message: r.error })
        else secret = r.secret
      }
      const now = clock.now()
      const when = resolveDeliverAt(v, now)
      if ('issues' in when) issues.push(...when.issues)
      throwIfIssues(issues)
      // No issues: both were accepted.
      const { body, json } = encoded as { body: string | null; json: boolean }
      const { at } = when as { at: number }
      if (body !== null && Buffer.byteLength(body) > config.maxBody) throw errors.payloadTooLarge(config.maxBody)
      const appId = opts.appId ?? v.app_id ?? 'default'
      const write = async (s: Store): Promise<{ row: RequestRow; created: boolean }> => {
        const r = await s.requests.create(
          {
            appId,
            method,
            url,
            headers,
            body,
            bodyJson: json,
            signingSecret: secret,
            timeoutMs: v.timeout_ms ?? config.requestTimeoutMs,
            retrySchedule: schedule,
            source: v.source ?? null,
            refId: v.ref_id ?? null,
            dedupKey: v.dedup_key ?? null,
            deliverAt: at,
            targetKey: originKey(new URL(url).origin),
            maxAttempts: maxAttemptsFor(schedule ?? config.retrySchedule),
          },
          now,
        )
        return { row: (await s.requests.get(r.deliveryId))!, created: r.created }
      }
      const { row, created } = opts.tx ? await write(opts.tx) : await store.tx(write)
      return { ...requestOut(row), deduplicated: !created }
    },
    async list(f = {}) {
      const page = await store.requests.list({
        ...(f.status ? { status: f.status } : {}),
        ...(f.source !== undefined ? { source: f.source } : {}),
        ...(f.ref_id !== undefined ? { refId: f.ref_id } : {}),
        ...(f.app_id !== undefined ? { appId: f.app_id } : {}),
        limit: pageSize(f.limit),
        cursor: f.cursor ?? null,
      })
      return { data: page.data.map((r) => requestOut(r)), next_cursor: page.next_cursor }
    },
    async get(id) {
      const row = await rowOr404(id)
      return requestOut(row, await store.deliveries.attempts(row.delivery.id)) as Awaited<ReturnType<RequestService['get']>>
    },
    async redeliver(id) {
      const { row, r } = await store.tx(async (s) => {
        const row = await rowOr404(id, s)
        return { row, r: await s.deliveries.redeliver(row.delivery.id, clock.now()) }
      })
      if (r === 'not_found') throw errors.notFound('Request')
      if (r !== 'ok') throw errors.notEligible('Only a request in success, dead or cancelled can be redelivered')
      return { id: row.id, status: 'pending' }
    },
    async cancel(id) {
      const row = await store.tx(async (s) => {
        const row = await rowOr404(id, s)
        const r = await s.requests.cancel(row.delivery.id, clock.now())
        if (r === 'not_found') throw errors.notFound('Request')
        if (r === 'not_eligible') throw errors.notEligible('Only a pending request can be cancelled')
        return (await s.requests.get(row.delivery.id))!
      })
      return requestOut(row)
    },
  }
}
