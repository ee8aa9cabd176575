import type { Store } from '../store/index.js'
import type { Config } from '../config.js'
import type { Clock } from '../lib/clock.js'
import { parseJsonOr } from '../lib/json.js'
import type { DeliveryPayload } from './delivery-payload.js'
import type { InboxService } from './inbox-service.js'
import { isHttpUrl, signClickLink, verifyClickLink } from './click-links.js'

/** Tracked email links: made for the email channel, followed by GET /c/:signed. */
export interface ClickTracking {
  /** The tracked link for an email's action_url, or null (tracking off, no http(s) action_url). */
  linkFor(payload: DeliveryPayload): string | null
  /**
   * Follows a signed link: records `clicked_at` for its recipient (the email receipt, and the
   * inbox message when there is one) and returns the notification's recorded http(s) action_url;
   * null for a tampered or unknown link, another recipient's, or a URL that is not http(s).
   */
  follow(signed: string): Promise<string | null>
}

/** What click tracking needs. */
export interface ClickTrackingDeps {
  store: Store
  config: Config
  clock: Clock
  tokenKey: Buffer | string
  inboxes: InboxService
}

/** Builds click tracking. */
export function createClickTracking(deps: ClickTrackingDeps): ClickTracking {
  const { store, config, clock, tokenKey, inboxes } = deps
  return {
    linkFor(p) {
      if (!config.trackClicks || !isHttpUrl(p.action_url)) return null
      return `${config.publicUrl}/c/${signClickLink(tokenKey, { notificationId: p.notification_id, recipient: p.recipient.id })}`
    },
    async follow(signed) {
      const claims = verifyClickLink(tokenKey, signed)
      if (!claims) return null
      // The checks and the click in one transaction: retention may remove the notification between them.
      const found = await store.tx(async (s) => {
        const n = await s.notifications.get(claims.notificationId)
        if (!n) return null
        const url = parseJsonOr<{ action_url?: unknown }>(n.request, {}).action_url
        if (typeof url !== 'string' || !isHttpUrl(url)) return null
        if (!(await s.receipts.hasDelivery(claims.notificationId, claims.recipient, 'email'))) return null
        await s.receipts.click(claims.notificationId, claims.recipient, clock.now())
        return { url, message: await s.inbox.messageOf(claims.notificationId, claims.recipient) }
      })
      if (found === null) return null
      // The inbox's own change, after the commit: it publishes the message's new state to live streams.
      if (found.message !== null) await inboxes.of(claims.recipient).clicked([found.message])
      return found.url
    },
  }
}
