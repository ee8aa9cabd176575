import { testConfig, type Config } from '../../src/config.js'
import { systemClock, type Clock } from '../../src/lib/clock.js'
import { silentLogger } from '../../src/log.js'
import type { Store } from '../../src/store/index.js'
import type { Dispatcher } from '../../src/delivery/dispatcher.js'
import type { WebhookSender, WebhookSenderDeps } from '../../src/delivery/http-sender.js'
import { createDeliveryStack } from '../../src/engine.js'
import { createWebhookService } from '../../src/webhooks/service.js'
import type { WebhookService } from '../../src/webhooks/types.js'
import { tempBackendStore } from '../helpers.js'

/** A wired webhook stack over a temp store (either backend): service, sender and dispatcher. */
export interface WebhookHarness {
  store: Store
  config: Config
  webhooks: WebhookService
  sender: WebhookSender
  dispatcher: Dispatcher
  close(): Promise<void>
}

/**
 * Builds the stack with the engine's own factory (createDeliveryStack) over the backend under
 * test (a fresh PostgreSQL database in the `postgres` project); allowNetworks opens 127.0.0.0/8
 * by default.
 */
export async function webhookHarness(
  opts: { config?: Partial<Config>; clock?: Clock; sender?: Partial<WebhookSenderDeps>; rng?: () => number } = {},
): Promise<WebhookHarness> {
  const { store, cleanup } = await tempBackendStore()
  const config = testConfig({ allowNetworks: ['127.0.0.0/8'], pollIntervalMs: 20, ...opts.config })
  const clock = opts.clock ?? systemClock
  const rng = opts.rng ?? (() => 0.5)
  const log = silentLogger()
  const webhooks = createWebhookService({ store, config, clock, rng, log })
  const { sender, dispatcher, stop } = createDeliveryStack({ store, config, clock, rng, log, webhooks, sender: opts.sender })
  return {
    store,
    config,
    webhooks,
    sender,
    dispatcher,
    async close() {
      await stop(100)
      await cleanup()
    },
  }
}

/** Polls `cond` (which may be asynchronous: its promise is awaited) every 5 ms until it is truthy; fails after `timeoutMs`. */
export async function until<T>(
  cond: () => T | null | undefined | false | Promise<T | null | undefined | false>, timeoutMs = 5000, what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await cond()
    if (v) return v as T
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}
