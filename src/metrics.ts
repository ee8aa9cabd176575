import { createRequire } from 'node:module'
import type { Counter, Histogram, Registry } from 'prom-client'
import { circuitState } from './delivery/breaker.js'
import type { DispatchObserver } from './delivery/channel.js'
import type { Clock } from './lib/clock.js'
import type { Channel } from './store/deliveries.js'
import type { Store } from './store/index.js'
import type { EndpointState } from './store/stats.js'

/** Series per status of the per-application queue gauge, at most: a scrape of 10,000 tenants stays readable. */
export const APP_SERIES_MAX = 1000

/** Numeric values of the circuit-state gauge. */
export const CIRCUIT_STATE = { closed: 0, half_open: 1, open: 2 } as const

/** Prometheus metrics of one Postbox: a DispatchObserver plus gauges read from the store on scrape. */
export interface Metrics extends DispatchObserver {
  readonly registry: Registry
  readonly contentType: string
  /** Renders the Prometheus text format (collects the gauges first). */
  render(): Promise<string>
}

/**
 * Creates the metrics on a private Registry (never the global one, so several instances coexist).
 * prom-client (~13 MB with the OpenTelemetry API its process metrics load) is loaded at the first
 * attempt or scrape, not at start: an idle server never loads it. Of the process metrics
 * (`defaultMetrics`), CPU counts from here, GC and event-loop figures from then on (docs/performance.md).
 */
export function createMetrics(store: Store, clock: Clock, opts: { defaultMetrics?: boolean } = {}): Metrics {
  let built: Built | null = null
  // The process CPU counters count from here, as when prom-client was loaded at start.
  const cpuAtStart = process.cpuUsage()
  const get = (): Built => (built ??= build(store, clock, opts, cpuAtStart))
  return {
    get registry() {
      return get().registry
    },
    get contentType() {
      return get().registry.contentType
    },
    attempt(channel: Channel, outcome, durationMs) {
      const { deliveries, latency } = get()
      deliveries.inc({ channel, outcome })
      if (outcome !== 'release' && outcome !== 'missed') latency.observe({ channel }, durationMs / 1000)
    },
    render: () => get().registry.metrics(),
  }
}

interface Built {
  registry: Registry
  deliveries: Counter<'channel' | 'outcome'>
  latency: Histogram<'channel'>
}

function build(store: Store, clock: Clock, opts: { defaultMetrics?: boolean }, cpuAtStart: NodeJS.CpuUsage): Built {
  const { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } = createRequire(import.meta.url)('prom-client') as typeof import('prom-client')
  const registry = new Registry()
  if (opts.defaultMetrics ?? false) {
    collectDefaultMetrics({ register: registry, prefix: 'postbox_' })
    // prom-client counts CPU from its own start; add what was used since createMetrics.
    const d = process.cpuUsage(cpuAtStart)
    const inc = (name: string, us: number): void => void (registry.getSingleMetric(`postbox_${name}`) as Counter | undefined)?.inc(us / 1e6)
    inc('process_cpu_user_seconds_total', d.user)
    inc('process_cpu_system_seconds_total', d.system)
    inc('process_cpu_seconds_total', d.user + d.system)
  }

  // Two gauges read the endpoints' state: one read per scrape (the gauges collect in the same
  // turn), not one each.
  let states: Promise<EndpointState[]> | null = null
  const endpointStates = (): Promise<EndpointState[]> => {
    if (states === null) {
      states = safe(() => store.stats.endpointStates(), [])
      setImmediate(() => (states = null))
    }
    return states
  }

  const deliveries = new Counter({
    name: 'postbox_deliveries_total',
    help: 'Finished delivery attempts by channel and outcome (success, retry, dead, snooze, release, missed)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'postbox_attempt_duration_seconds',
    help: 'Duration of delivery attempts by channel',
    labelNames: ['channel'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  })
  new Gauge({
    name: 'postbox_queue_depth',
    help: 'Deliveries waiting (pending) and being sent (in_flight); finished ones are counted by postbox_deliveries_total',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      // Not countByStatus: counting finished rows reads the whole table (~350 ms per million rows)
      // on the event loop at every scrape.
      const depth = await safe<Record<string, number>>(() => store.deliveries.queueDepth(), {})
      this.reset()
      for (const [status, n] of Object.entries(depth)) this.set({ status }, n)
    },
  })
  new Gauge({
    name: 'postbox_app_queue_depth',
    help: `Pending and in-flight deliveries per application (the ${APP_SERIES_MAX} applications with the most of each)`,
    labelNames: ['app_id', 'status'] as const,
    registers: [registry],
    async collect() {
      const rows = await safe(() => store.apps.queuedByApp(APP_SERIES_MAX), [])
      this.reset()
      for (const r of rows) this.set({ app_id: r.appId, status: r.status }, r.n)
    },
  })
  new Gauge({
    name: 'postbox_oldest_pending_age_seconds',
    help: 'Age of the oldest pending delivery (by its next attempt time); 0 when none',
    registers: [registry],
    async collect() {
      const t = await safe(() => store.deliveries.oldestPendingAt(), null)
      this.set(t === null ? 0 : Math.max(0, (clock.now() - t) / 1000))
    },
  })
  new Gauge({
    name: 'postbox_endpoint_circuit_state',
    help: 'Circuit breaker per endpoint: 0 closed, 1 half-open (probing), 2 open (paused)',
    labelNames: ['endpoint_id'] as const,
    registers: [registry],
    async collect() {
      const rows = await endpointStates()
      this.reset()
      const now = clock.now()
      for (const e of rows) {
        this.set({ endpoint_id: e.id }, CIRCUIT_STATE[circuitState(e, now)])
      }
    },
  })
  new Gauge({
    name: 'postbox_endpoint_disabled',
    help: '1 when the endpoint is disabled',
    labelNames: ['endpoint_id', 'reason'] as const,
    registers: [registry],
    async collect() {
      const rows = await endpointStates()
      this.reset()
      for (const e of rows) {
        if (e.disabled) this.set({ endpoint_id: e.id, reason: e.disabledReason ?? 'manual' }, 1)
      }
    },
  })

  return { registry, deliveries, latency }
}

async function safe<T>(fn: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await fn()
  } catch {
    // a scrape during shutdown (closed database) must not fail the whole exposition
    return fallback
  }
}
