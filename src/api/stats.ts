import { createRoute, z } from '@hono/zod-openapi'
import { circuitState } from '../delivery/breaker.js'
import { errors } from '../errors.js'
import { parseDuration } from '../lib/duration.js'
import { toIso } from '../lib/clock.js'
import { appFilter } from '../apps/service.js'
import { callerApp, requireAppRole } from './auth.js'
import { bearerSecurity, errorResponses, jsonResponse, newRouter } from './common.js'

// Scoped viewer keys see their own application's numbers; portal tokens are not admitted (docs/applications.md lists their routes).
const viewer = requireAppRole(['viewer'])
const base = { security: bearerSecurity, tags: ['stats'] }

/** The most buckets one timeseries answers: a day by the minute, with room for a partial bucket. */
export const MAX_BUCKETS = 1500
/** The finest bucket: the attempt log's times are milliseconds, but a chart needs no finer than seconds. */
const MIN_BUCKET_MS = 1000
const DAY_MS = 86_400_000
/** How many endpoints the overview lists (like `postbox stats`). */
const ENDPOINTS_SHOWN = 1000
/** The attempt outcomes of the log, in the order the series list them. */
export const OUTCOMES = ['success', 'retry', 'dead', 'snooze'] as const

const Counts = z
  .object({ pending: z.number().int(), in_flight: z.number().int(), success: z.number().int(), dead: z.number().int(), cancelled: z.number().int() })
  .openapi('DeliveryCounts')

const EndpointHealth = z
  .object({
    id: z.string(),
    url: z.string(),
    disabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    paused_until: z.string().nullable(),
    circuit: z.enum(['closed', 'open', 'half_open']),
    consecutive_failures: z.number().int(),
    last_success_at: z.string().nullable(),
    pending: z.number().int(),
    failing: z.boolean().openapi({ description: 'Disabled, circuit not closed, or failures since the last success' }),
  })
  .openapi('EndpointHealth')

const Stats = z
  .object({
    deliveries: Counts,
    oldest_pending_at: z.string().nullable().openapi({ description: 'When the oldest pending delivery was accepted' }),
    oldest_pending_age_seconds: z.number().nullable(),
    next_due_at: z.string().nullable().openapi({ description: 'The earliest time a pending delivery is due' }),
    endpoints: z.array(EndpointHealth),
    failing_endpoints: z.number().int(),
    app_id: z.string().nullable().openapi({ description: 'The application these numbers are of; null for all of them' }),
    apps: z
      .array(z.object({ app_id: z.string(), deliveries: Counts }))
      .openapi({ description: 'Deliveries by status of each application that has any (of the one application when filtered)' }),
  })
  .openapi('Stats')

const StatsQuery = z.object({
  app_id: z.string().max(100).optional().openapi({ description: "Only this application's deliveries and endpoints (a scoped key: always its own)" }),
})

const TimeseriesQuery = z.object({
  since: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Start of the range (default: 24 h ago), rounded down to a bucket' }),
  until: z.iso.datetime({ offset: true }).optional().openapi({ description: 'End of the range (default: now)' }),
  bucket: z
    .string()
    .max(20)
    .optional()
    .openapi({ description: `Bucket size as a duration (1m, 5m, 1h; default 1m), at least 1s and at most ${MAX_BUCKETS} buckets per range` }),
  endpoint_id: z.string().max(200).optional().openapi({ description: "Only the attempts of this endpoint's deliveries" }),
  app_id: z.string().max(100).optional().openapi({ description: "Only the attempts of this application's deliveries (a scoped key or portal token: always its own)" }),
})

const Bucket = z
  .object({
    start: z.string(),
    success: z.number().int(),
    retry: z.number().int(),
    dead: z.number().int(),
    snooze: z.number().int(),
    attempts: z.number().int(),
    avg_duration_ms: z.number().nullable(),
  })
  .openapi('StatsBucket')

const Timeseries = z
  .object({
    since: z.string(),
    until: z.string(),
    bucket_seconds: z.number(),
    data: z.array(Bucket),
    totals: Bucket.omit({ start: true }),
  })
  .openapi('StatsTimeseries')

const routes = {
  stats: createRoute({
    ...base, method: 'get', path: '/v1/stats', operationId: 'getStats', summary: 'Queue depth, oldest pending and endpoint health (viewer)',
    middleware: [viewer] as const,
    request: { query: StatsQuery },
    responses: { 200: jsonResponse(Stats, 'the numbers of `postbox stats`'), ...errorResponses },
  }),
  timeseries: createRoute({
    ...base, method: 'get', path: '/v1/stats/timeseries', operationId: 'getStatsTimeseries', summary: 'Delivery attempts per time bucket by outcome (viewer)',
    middleware: [viewer] as const,
    request: { query: TimeseriesQuery },
    responses: { 200: jsonResponse(Timeseries, 'every bucket of the range, oldest first'), ...errorResponses },
  }),
}

type BucketJson = z.infer<typeof Bucket>
type CountsJson = z.infer<typeof Counts>

const noCounts = (): CountsJson => ({ pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 })

/** Sums outcome counts into the JSON of one bucket (or of the totals). */
function bucketJson(counts: Record<string, number>, durationMs: number): Omit<BucketJson, 'start'> {
  const attempts = Object.values(counts).reduce((a, b) => a + b, 0)
  return {
    success: counts.success ?? 0,
    retry: counts.retry ?? 0,
    dead: counts.dead ?? 0,
    snooze: counts.snooze ?? 0,
    attempts,
    avg_duration_ms: attempts === 0 ? null : Math.round((durationMs / attempts) * 10) / 10,
  }
}

/** GET /v1/stats and GET /v1/stats/timeseries: what the console's overview shows. */
export function statsRoutes() {
  const r = newRouter()
  r.openapi(routes.stats, async (c) => {
    const { store, clock } = c.var.deps
    const now = clock.now()
    const app = await appFilter(store, callerApp(c), c.req.valid('query').app_id)
    const oldest = app === undefined ? await store.stats.oldestPendingCreatedAt() : await store.stats.appOldestPendingCreatedAt(app)
    const health = app === undefined ? await store.stats.endpointHealth(ENDPOINTS_SHOWN) : await store.stats.appEndpointHealth(app, ENDPOINTS_SHOWN)
    const endpoints = health.map((e) => {
      const circuit = circuitState(e, now)
      return {
        id: e.id,
        url: e.url,
        disabled: e.disabled,
        disabled_reason: e.disabledReason,
        paused_until: toIso(e.pausedUntil),
        circuit,
        consecutive_failures: e.consecutiveFailures,
        last_success_at: toIso(e.lastSuccessAt),
        pending: e.pending,
        failing: e.disabled || circuit !== 'closed' || e.consecutiveFailures > 0,
      }
    })
    const total = noCounts()
    const byApp = new Map<string, CountsJson>()
    for (const row of await store.stats.countByAppAndStatus()) {
      if (app !== undefined && row.appId !== app) continue
      if (!(row.status in total)) continue
      const status = row.status as keyof CountsJson
      let counts = byApp.get(row.appId)
      if (!counts) byApp.set(row.appId, (counts = noCounts()))
      counts[status] += row.n
      total[status] += row.n
    }
    const nextDue = app === undefined ? await store.deliveries.oldestPendingAt() : await store.stats.appNextDueAt(app)
    return c.json(
      {
        deliveries: total,
        oldest_pending_at: toIso(oldest),
        oldest_pending_age_seconds: oldest === null ? null : Math.max(0, Math.round((now - oldest) / 1000)),
        next_due_at: toIso(nextDue),
        endpoints,
        failing_endpoints: endpoints.filter((e) => e.failing).length,
        app_id: app ?? null,
        apps: [...byApp].map(([id, deliveries]) => ({ app_id: id, deliveries })),
      },
      200,
    )
  })
  r.openapi(routes.timeseries, async (c) => {
    const { store, clock, webhooks } = c.var.deps
    const q = c.req.valid('query')
    const bucketMs = q.bucket === undefined ? 60_000 : parseDuration(q.bucket)
    if (bucketMs === null || bucketMs < MIN_BUCKET_MS || bucketMs > 31 * DAY_MS) {
      throw errors.validation([{ field: 'bucket', message: 'must be a duration from 1s to 31d, such as 1m, 5m or 1h', in: 'query' }])
    }
    const until = q.until === undefined ? clock.now() : Date.parse(q.until)
    const requested = q.since === undefined ? until - DAY_MS : Date.parse(q.since)
    const since = Math.floor(requested / bucketMs) * bucketMs
    if (since >= until) throw errors.validation([{ field: 'since', message: 'must be before until', in: 'query' }])
    if ((until - since) / bucketMs > MAX_BUCKETS) {
      throw errors.validation([{ field: 'bucket', message: `gives more than ${MAX_BUCKETS} buckets for this range: choose a larger bucket or a shorter range`, in: 'query' }])
    }
    const scope = callerApp(c)
    const app = await appFilter(store, scope, q.app_id)
    // 404 for an unknown endpoint (or one of another application), as its own routes answer.
    if (q.endpoint_id !== undefined) await webhooks.endpoints.get(q.endpoint_id, scope)
    const buckets = await store.stats.attemptTimeseries(since, until, bucketMs, q.endpoint_id !== undefined ? { endpointId: q.endpoint_id } : { appId: app })
    const total: Record<string, number> = {}
    let totalMs = 0
    for (const b of buckets) {
      for (const [k, v] of Object.entries(b.counts)) total[k] = (total[k] ?? 0) + v
      totalMs += b.durationMs
    }
    return c.json(
      {
        since: toIso(since),
        until: toIso(until),
        bucket_seconds: bucketMs / 1000,
        data: buckets.map((b) => ({ start: toIso(b.start), ...bucketJson(b.counts, b.durationMs) })),
        totals: bucketJson(total, totalMs),
      },
      200,
    )
  })
  return r
}
