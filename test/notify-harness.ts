import { testConfig, type Config } from '../src/config.js'
import { ManualClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import type { SettleResult } from '../src/store/deliveries.js'
import { createNotifyService, type NotifyDeps, type NotifyService } from '../src/notify/service.js'
import { tempBackendStore } from './helpers.js'

/** A published webhook event captured by the harness. */
export interface Published {
  type: string
  data: Record<string, unknown>
  id: string | undefined
}

/**
 * A notify service over a real store (SQLite, or PostgreSQL in the `postgres` project) with a manual clock, plus `drain()`: a minimal
 * dispatcher (claim every due row, send it through its notify channel, settle the batch). The
 * applications `a1` and `a2` exist beside `default`.
 */
export async function notifyHarness(overrides: Partial<Config> = {}, deps: Partial<NotifyDeps> = {}) {
  const { store, dir, cleanup } = await tempBackendStore()
  const clock = new ManualClock(Date.parse('2026-01-15T12:00:00Z'))
  // Two applications besides default, for the app-scoped inbox tests (an unknown app_id is 404).
  for (const id of ['a1', 'a2']) await store.apps.insert({ id, name: id, metadata: {} }, clock.now())
  const config = testConfig({ dataDir: dir, ...overrides })
  const published: Published[] = []
  const notify: NotifyService = createNotifyService({
    store,
    config,
    clock,
    rng: () => 0.5,
    log: silentLogger(),
    tokenKey: 'test-token-key',
    publishEvent: async (type, data, id) => void published.push({ type, data, id }),
    ...deps,
  })
  const signal = new AbortController().signal
  async function drain(): Promise<SettleResult[]> {
    const all: SettleResult[] = []
    for (;;) {
      const claimed = await store.deliveries.claimDue({ limit: 1000, now: clock.now(), defaultTimeoutMs: 30_000 })
      if (claimed.length === 0) return all
      const results = await Promise.all(
        claimed.map((d) => notify.channels[d.channel as 'inbox' | 'email' | 'notify-webhook'].send(d, signal)),
      )
      all.push(
        ...(await store.deliveries.settle(
          claimed.map((d, i) => ({ id: d.id, claimToken: d.claimToken, outcome: results[i]!.outcome, attempt: results[i]!.attempt })),
          clock.now(),
        )),
      )
    }
  }
  return {
    store,
    clock,
    config,
    notify,
    published,
    drain,
    cleanup: async () => {
      notify.close()
      await cleanup()
    },
  }
}

/** The harness type. */
export type NotifyHarness = Awaited<ReturnType<typeof notifyHarness>>
