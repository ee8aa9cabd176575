import { PostboxInbox } from './element.js'

/**
 * The inbox element's module (served at /sdk/inbox.js, exported as `postbox/inbox`): importing
 * it defines `<postbox-inbox>` once (docs/inbox-element.md).
 */

export { PostboxInbox } from './element.js'
export { parseTabs, safeActionUrl, snoozeUntil } from './policy.js'
export { SseParser, backoffDelay, openStream } from './sse.js'
export type { InboxItem, InboxCounts } from './api.js'

if (typeof customElements !== 'undefined' && !customElements.get('postbox-inbox')) customElements.define('postbox-inbox', PostboxInbox)

declare global {
  interface HTMLElementTagNameMap {
    'postbox-inbox': PostboxInbox
  }
}
