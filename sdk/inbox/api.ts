import type { Client } from 'openapi-fetch'
import { createPostboxClient, PostboxApiError, unwrap, type components, type paths } from '../client/index.js'
import type { InboxCounts, PendingPaths } from './pending-routes.js'

/** One inbox message as the element shows it (the list item, with the receipts fields when the server sends them). */
export type InboxItem = components['schemas']['InboxMessage'] & {
  tags?: string[]
  snoozed_until?: string | null
  clicked_at?: string | null
}

export type { InboxCounts }

/** One page of the list. */
export interface InboxPage {
  data: InboxItem[]
  unread_count: number
  next_cursor: string | null
}

/** Snooze at most this far ahead (the server's limit is 90 days). */
const MAX_SNOOZE_MS = 90 * 86_400_000

/**
 * The REST calls of the inbox element, over the typed client with the user token. A server
 * without the counts route (older than the receipts) answers 404: `counts` then resolves null
 * and the element shows the unread count alone.
 */
export class InboxApi {
  private readonly client: Client<paths & PendingPaths>
  constructor(server: string, token: string, fetchImpl?: typeof fetch) {
    this.client = createPostboxClient({ baseUrl: server, token, ...(fetchImpl ? { fetch: fetchImpl } : {}) }) as unknown as Client<paths & PendingPaths>
  }

  /** A page of non-archived messages, newest first; `tag` limits it to one tab. */
  async list(tag: string | null, cursor: string | null, limit = 20): Promise<InboxPage> {
    // `tags` is the receipts filter; typed as an extra field so older schemas still compile.
    const query: NonNullable<paths['/v1/inbox']['get']['parameters']['query']> & { tags?: string } = { status: 'all', archived: 'false', limit }
    if (cursor) query.cursor = cursor
    if (tag) query.tags = tag
    return (await unwrap(this.client.GET('/v1/inbox', { params: { query } }))) as InboxPage
  }

  /** Exact counts, per tag for `tags`; null when the server has no counts route. */
  async counts(tags: readonly string[]): Promise<InboxCounts | null> {
    try {
      return await unwrap(this.client.GET('/v1/inbox/counts', { params: { query: tags.length ? { tags: tags.join(',') } : {} } }))
    } catch (err) {
      if (err instanceof PostboxApiError && err.status === 404) return null
      throw err
    }
  }

  /** The exact unread count. */
  async unreadCount(): Promise<number> {
    return (await unwrap(this.client.GET('/v1/inbox/unread-count'))).unread_count
  }

  /** Changes the state of messages; resolves how many changed. */
  async change(change: 'read' | 'unread' | 'seen' | 'archive' | 'unarchive', ids: string[]): Promise<number> {
    if (ids.length === 0) return 0
    return (await unwrap(this.client.POST(`/v1/inbox/${change}`, { body: { ids } }))).updated
  }

  /** Marks everything read (in one tab when `tag` is given). */
  async readAll(tag: string | null): Promise<number> {
    const init = tag ? { body: { tags: [tag] } as never } : {}
    return (await unwrap(this.client.POST('/v1/inbox/read-all', init))).updated
  }

  /** Hides messages until `until`. */
  async snooze(ids: string[], until: Date): Promise<number> {
    const capped = new Date(Math.min(until.getTime(), Date.now() + MAX_SNOOZE_MS))
    return (await unwrap(this.client.POST('/v1/inbox/snooze', { body: { ids, until: capped.toISOString() } }))).updated
  }

  /**
   * Records a click (which also marks read). `keepalive` lets it finish when the click then
   * navigates the page away. A server without the route gets a plain read instead.
   */
  async clicked(ids: string[]): Promise<void> {
    try {
      await unwrap(this.client.POST('/v1/inbox/clicked', { body: { ids }, keepalive: true }))
    } catch (err) {
      if (!(err instanceof PostboxApiError && err.status === 404)) throw err
      await this.change('read', ids)
    }
  }
}
