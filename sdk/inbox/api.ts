import { createPostboxClient, PostboxApiError, unwrap, type components, type PostboxClient } from '../client/index.js'

/** One inbox message as the list and the stream carry it. */
export type InboxItem = components['schemas']['InboxMessage']

/** Exact counts over the visible messages, and per tag asked for (the tabs). */
export type InboxCounts = components['schemas']['InboxCounts']

/** One page of the list. */
export type InboxPage = components['schemas']['InboxList']

/** Snooze at most this far ahead (the server's limit is 90 days; a minute of margin for clock skew). */
const MAX_SNOOZE_MS = 90 * 86_400_000 - 60_000

/**
 * The REST calls of the inbox element, over the typed client with the user token. A server
 * older than the receipts (no counts or clicked route) answers 404: `counts` then resolves
 * null, and a click is recorded as a read.
 */
export class InboxApi {
  private readonly client: PostboxClient
  constructor(server: string, token: string, fetchImpl?: typeof fetch) {
    this.client = createPostboxClient({ baseUrl: server, token, ...(fetchImpl ? { fetch: fetchImpl } : {}) })
  }

  /** A page of visible (not archived, not snoozed) messages, newest first; `tag` limits it to one tab. */
  async list(tag: string | null, cursor: string | null, limit = 20): Promise<InboxPage> {
    const query = { status: 'all', archived: 'false', limit, ...(cursor ? { cursor } : {}), ...(tag ? { tags: tag } : {}) } as const
    return unwrap(this.client.GET('/v1/inbox', { params: { query } }))
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

  /** Changes the state of messages; resolves how many changed. */
  async change(change: 'read' | 'unread' | 'seen' | 'archive' | 'unarchive', ids: string[]): Promise<number> {
    if (ids.length === 0) return 0
    return (await unwrap(this.client.POST(`/v1/inbox/${change}`, { body: { ids } }))).updated
  }

  /** Marks everything read (in one tab when `tag` is given). */
  async readAll(tag: string | null): Promise<number> {
    return (await unwrap(this.client.POST('/v1/inbox/read-all', { body: tag ? { tags: [tag] } : {} }))).updated
  }

  /** Hides messages until `until` (capped at the server's 90 days). */
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
