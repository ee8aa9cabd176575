/**
 * The Postbox delivery stack on PostgreSQL for the `pg` suite (bench/pg.ts, bench/pg-node.ts):
 * the store from `openPgStore`, the webhook service and the engine's delivery stack
 * (src/engine.ts), as bench/webhooks.ts's `postboxStack` builds them on SQLite.
 */
import { testConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import { createDeliveryStack } from '../src/engine.js'
import { openPgStore } from '../src/store/pg/index.js'
import { createWebhookService } from '../src/webhooks/service.js'

/** Opens the store at `url` and builds the stack; `successes()` counts successful attempts. */
export async function pgStack(url: string, poolMax?: number) {
  const store = await openPgStore(url, poolMax !== undefined ? { poolMax } : {})
  let successes = 0
  const config = testConfig({ allowNetworks: ['127.0.0.0/8'] })
  const deps = { store, config, clock: systemClock, rng: Math.random, log: silentLogger() }
  const webhooks = createWebhookService(deps)
  const observer = { attempt: (_c: string, outcome: string) => void (outcome === 'success' && successes++) }
  const stack = createDeliveryStack({ ...deps, webhooks, observer })
  return {
    store,
    webhooks,
    dispatcher: stack.dispatcher,
    successes: () => successes,
    async close() {
      await stack.stop(1000)
      await store.close()
    },
  }
}

/** The stack `pgStack` builds. */
export type PgStack = Awaited<ReturnType<typeof pgStack>>
