import type { Config } from './config.js'
import type { AttemptHook, ChannelRegistry, ChannelSender, DispatchObserver } from './delivery/channel.js'
import { createRequestSender } from './delivery/request-sender.js'
import { createDispatcher, type Dispatcher } from './delivery/dispatcher.js'
import { createWebhookSender, type WebhookSender, type WebhookSenderDeps } from './delivery/http-sender.js'
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

/** What `createDeliveryStack` wires: the engine's deps, with the notify service when there is one. */
export interface DeliveryStackDeps extends Omit<EngineDeps, 'observer'> {
  observer?: DispatchObserver | undefined
  /** Its inbox, email and notify-webhook channels join the registry. */
  notify?: NotifyService | undefined
  /** Overrides of the webhook sender's deps (tests: a resolver, a connect hook). */
  sender?: Partial<WebhookSenderDeps> | undefined
  /** Channel senders that replace (or add to) the wired ones (benchmarks: a counting wrapper). */
  channels?: ReadonlyMap<Channel, ChannelSender> | undefined
}

/** The webhook and request senders, the channel registry and the dispatcher over it. */
export interface DeliveryStack {
  readonly sender: WebhookSender
  readonly channels: ChannelRegistry
  readonly dispatcher: Dispatcher
  /** Stops the dispatcher (drain within `deadlineMs`, release claims), then closes the webhook and request senders. */
  stop(deadlineMs: number): Promise<void>
}

/**
 * The one wiring of channels, sender and dispatcher, used by the engine, the test harnesses and
 * the benchmarks. The sender's disable hook publishes `postbox.endpoint.disabled` through the
 * webhook service: bridged here, at the top of the layers, as delivery never imports webhooks.
 */
export function createDeliveryStack(deps: DeliveryStackDeps): DeliveryStack {
  const { store, config, clock, rng, log, webhooks, notify } = deps
  const sender = createWebhookSender({ store, config, clock, rng, log, onEndpointDisabled: publishEndpointDisabled(webhooks), ...deps.sender })
  const requestSender = createRequestSender({ store, config, clock, rng, log })
  const channels = new Map<Channel, ChannelSender>([
    ['webhook', sender],
    ['request', requestSender],
  ])
  if (notify) {
    channels.set('inbox', notify.channels.inbox)
    channels.set('email', notify.channels.email)
    channels.set('notify-webhook', notify.channels['notify-webhook'])
  }
  for (const [name, channel] of deps.channels ?? []) channels.set(name, channel)
  const dispatcher = createDispatcher({
    store, config, clock, rng, log, channels, observer: deps.observer, ...(deps.onAttempt ? { onAttempt: deps.onAttempt } : {}),
  })
  return {
    sender,
    channels,
    dispatcher,
    async stop(deadlineMs) {
      try {
        await dispatcher.stop(deadlineMs)
      } finally {
        await sender.close().catch(() => {})
        await requestSender.close().catch(() => {})
      }
    },
  }
}

/**
 * The delivery side of a Postbox: the notify service and the delivery stack. The notify layer
 * never imports webhooks, so its `publishEvent` is bridged here.
 */
export function createEngine(deps: EngineDeps): Engine {
  const { store, config, clock, rng, log, webhooks } = deps
  const notify = createNotifyService({
    store,
    config,
    clock,
    rng,
    log,
    tokenKey: loadTokenKey(config.tokenSecret, config.dataDir),
    observer: deps.observer,
    publishEvent: async (type, data, id, appId) => {
      await webhooks.publish(type, data, { ...(id !== undefined ? { id } : {}), ...(appId !== undefined ? { appId } : {}) })
    },
  })
  const stack = createDeliveryStack({ ...deps, notify })
  return {
    dispatcher: stack.dispatcher,
    notify,
    async stop(deadlineMs) {
      try {
        await stack.stop(deadlineMs)
      } finally {
        notify.close()
      }
    },
  }
}
