import type { Config } from './config.js'
import type { AttemptHook, ChannelRegistry, ChannelSender, DispatchObserver } from './delivery/channel.js'
import { createRequestSender } from './delivery/request-sender.js'
import { createDispatcher, type Dispatcher } from './delivery/dispatcher.js'
import { createWebhookSender } from './delivery/http-sender.js'
import type { Clock, Rng } from './lib/clock.js'
import type { Log } from './log.js'
import { createNotifyService, type NotifyService } from './notify/service.js'
import { loadTokenKey } from './notify/tokens.js'
import type { Channel } from './store/deliveries.js'
import type { Store } from './store/index.js'
import type { WebhookService } from './webhooks/types.js'
import { publishEndpointDisabled } from './webhooks/operational.js'

/** What `createEngine` wires together. */
export interface EngineDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  webhooks: WebhookService
  observer?: DispatchObserver
  /** Called after every attempt of every channel (the library's `onAttempt`). */
  onAttempt?: AttemptHook
}

/** The delivery side of a Postbox: the notify service, the channel senders and the dispatcher. */
export interface Engine {
  readonly dispatcher: Dispatcher
  readonly notify: NotifyService
  /** Stops the dispatcher (drain within `deadlineMs`, release claims), then closes the senders. */
  stop(deadlineMs: number): Promise<void>
}

/**
 * Wires the channels into one dispatcher registry. The notify layer never imports webhooks, so
 * its `publishEvent` and the sender's disable hook are bridged here, at the top of the layers.
 */
export function createEngine(deps: EngineDeps): Engine {
  const { store, config, clock, rng, log, webhooks } = deps
  const sender = createWebhookSender({
    store,
    config,
    clock,
    rng,
    log,
    onEndpointDisabled: publishEndpointDisabled(webhooks),
  })
  const requestSender = createRequestSender({ store, config, clock, rng, log })
  const notify = createNotifyService({
    store,
    config,
    clock,
    rng,
    log,
    tokenKey: loadTokenKey(config.tokenSecret, config.dataDir),
    observer: deps.observer,
    publishEvent: (type, data, id) => {
      webhooks.publish(type, data, id === undefined ? undefined : { id })
    },
  })
  const channels: ChannelRegistry = new Map<Channel, ChannelSender>([
    ['webhook', sender],
    ['inbox', notify.channels.inbox],
    ['email', notify.channels.email],
    ['notify-webhook', notify.channels['notify-webhook']],
    ['request', requestSender],
  ])
  const dispatcher = createDispatcher({
    store, config, clock, rng, log, channels, observer: deps.observer, ...(deps.onAttempt ? { onAttempt: deps.onAttempt } : {}),
  })
  return {
    dispatcher,
    notify,
    async stop(deadlineMs) {
      try {
        await dispatcher.stop(deadlineMs)
      } finally {
        await sender.close().catch(() => {})
        await requestSender.close().catch(() => {})
        notify.close()
      }
    },
  }
}
