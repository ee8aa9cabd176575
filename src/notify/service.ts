import { requireApp as requireAppIn } from '../apps/service.js'
import type { Store } from '../store/index.js'
import { STREAM_LOG_SIZE } from '../store/inbox.js'
import type { ChannelSender, DispatchObserver } from '../delivery/channel.js'
import type { Config } from '../config.js'
import type { Log } from '../log.js'
import { toIso, type Clock, type Rng } from '../lib/clock.js'
import { createPipeline, type RenderingDeps } from './pipeline.js'
import { createInboxStreamHub, type InboxStreamHub } from './inbox-stream.js'
import { issueUserToken, verifyUserToken, type UserTokenClaims } from './tokens.js'
import { createInboxChannel } from './channels/inbox.js'
import { createEmailChannel } from './channels/email.js'
import { createNotifyWebhookChannel, type PublishEvent } from './channels/notify-webhook.js'
import { assertUserId, createDirectoryService, type DirectoryService } from './directory-service.js'
import { createNotificationService, type NotificationService } from './notification-service.js'
import { createInboxService, type InboxService, type UserInbox } from './inbox-service.js'
import { createClickTracking, type ClickTracking } from './click-tracking.js'

export { NOTIFICATION_DELIVERIES_SHOWN } from './notification-service.js'
export { normalizePrincipal, type PageRequest } from './directory-service.js'
export { userJson } from './presenters.js'
export type { InboxListOptions, UserInbox } from './inbox-service.js'

/** A keepalive comment every 25 s keeps proxies from closing an idle stream (docs/notifications.md). */
export const STREAM_KEEPALIVE_MS = 25_000

/** An application id: what `requireApp` is asked about, and what tokens and notifications carry. */
export const APP_ID_PATTERN = /^[a-zA-Z0-9_.:-]{1,100}$/

/** Dependencies of the notify service. */
export interface NotifyDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  /** The key that signs end-user tokens (see loadTokenKey) and tracked email links. */
  tokenKey: Buffer | string
  /** Publishes an event through the webhook engine (the notify layer never imports webhooks). */
  publishEvent: PublishEvent
  /** Rejects with 404 `not_found` unless the application exists (by default: in the apps table). */
  requireApp?: (appId: string) => Promise<void>
  /** Keepalive comment interval of the SSE inbox stream; 25 s by default (tests shorten it). */
  streamKeepaliveMs?: number
  /** Live events one stream may hold unsent before it is cut off; the replay log's length by default. */
  streamMaxQueued?: number
  /** The dispatcher's observer (metrics): also counts the inbox deliveries written at accept and digest members. */
  observer?: DispatchObserver
  /** Tests replace the template renderer and the render budget's timer. */
  rendering?: RenderingDeps
}

/** The notification side of Postbox: pipeline, directory, tokens, inboxes, live streams and channels. */
export interface NotifyService extends DirectoryService {
  notifications: NotificationService
  tokens: {
    /** A token for `userId`, limited to `appId`'s messages when given. */
    issue(userId: string, ttlSeconds?: number, appId?: string): Promise<{ token: string; expires_at: string; app_id: string | null }>
    verify(token: string): UserTokenClaims | null
  }
  /** The inbox of `userId`, as a token limited to `appId` (null: every application) sees it. */
  inbox(userId: string, appId?: string | null): UserInbox
  /** The inboxes and their snooze waker. */
  inboxes: InboxService
  /** Tracked email links (POSTBOX_TRACK_CLICKS). */
  clicks: ClickTracking
  stream: InboxStreamHub
  /** How often the SSE stream sends a keepalive comment. */
  streamKeepaliveMs: number
  /** Live events one stream may hold unsent; past it the client is cut off and replays on reconnect. */
  streamMaxQueued: number
  channels: { inbox: ChannelSender; email: ChannelSender; 'notify-webhook': ChannelSender }
  /** Releases SMTP connections and the snooze timer. */
  close(): void
}

/** Builds the notify service and its three channel senders. */
export function createNotifyService(deps: NotifyDeps): NotifyService {
  const { store, config, clock, rng, log, tokenKey } = deps
  const requireApp =
    deps.requireApp ??
    (async (appId: string): Promise<void> => {
      await requireAppIn(store, appId)
    })
  const schedule = config.notificationRetrySchedule
  const hub = createInboxStreamHub()
  const accept = createPipeline({ store, config, clock, log, hub, observer: deps.observer, rendering: deps.rendering })
  const inboxes = createInboxService({ store, clock, log, hub, requireApp })
  const clicks = createClickTracking({ store, config, clock, tokenKey, inboxes })
  const email = createEmailChannel({
    store, clock, rng, log, schedule, smtpUrl: config.smtpUrl, from: config.emailFrom, observer: deps.observer, trackedLink: clicks.linkFor,
  })

  return {
    ...createDirectoryService(store, clock),
    notifications: createNotificationService({ store, accept, requireApp }),
    tokens: {
      async issue(userId, ttlSeconds, appId) {
        assertUserId(userId)
        if (appId !== undefined) await requireApp(appId)
        const expiresAt = clock.now() + (ttlSeconds !== undefined ? ttlSeconds * 1000 : 86_400_000)
        return { token: issueUserToken(tokenKey, userId, expiresAt, appId ?? null), expires_at: toIso(expiresAt), app_id: appId ?? null }
      },
      verify: (token) => verifyUserToken(tokenKey, token, clock.now()),
    },
    inbox: (userId, appId = null) => inboxes.of(userId, appId),
    inboxes,
    clicks,
    stream: hub,
    streamKeepaliveMs: deps.streamKeepaliveMs ?? STREAM_KEEPALIVE_MS,
    streamMaxQueued: deps.streamMaxQueued ?? STREAM_LOG_SIZE,
    channels: {
      inbox: createInboxChannel({ store, hub, clock, rng, log, schedule }),
      email,
      'notify-webhook': createNotifyWebhookChannel({ publishEvent: deps.publishEvent, clock, rng, log, schedule }),
    },
    close: () => {
      inboxes.close()
      email.close()
    },
  }
}
