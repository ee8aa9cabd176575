import type { Store } from '../store/index.js'
import type { ChangeResult, InboxBulkChange, InboxCounts, InboxStateChange, StreamEvent } from '../store/inbox.js'
import { messageJson } from '../store/inbox.js'
import type { Clock } from '../lib/clock.js'
import type { Log } from '../log.js'
import { pageSize } from '../lib/cursor.js'
import { errors } from '../errors.js'
import type { InboxStreamHub } from './inbox-stream.js'
import { MAX_SNOOZE_MS, type InboxCountsJson, type InboxFilterInput, type InboxListJson } from './inbox-schemas.js'

/** `GET /v1/inbox` options; all optional. */
export interface InboxListOptions {
  status?: 'unread' | 'read' | 'all'
  archived?: boolean
  snoozed?: boolean
  topic?: string
  tags?: readonly string[]
  app_id?: string
  limit?: number
  cursor?: string | null
}

/** `GET /v1/inbox/counts` options. */
export interface InboxCountsOptions {
  tags?: readonly string[]
  topic?: string
  app_id?: string
}

/** `{updated: n}` of every change. */
export interface Updated {
  updated: number
}

/**
 * One user's inbox (through one token): every operation is confined to that user's messages,
 * and with an app-limited token to that application's.
 */
export interface UserInbox {
  list(opts?: InboxListOptions): Promise<InboxListJson>
  /** The unread count the token may see: the user's, or the token's application's. */
  unreadCount(): Promise<number>
  counts(opts?: InboxCountsOptions): Promise<InboxCountsJson>
  read(ids: readonly string[]): Promise<Updated>
  unread(ids: readonly string[]): Promise<Updated>
  seen(ids: readonly string[]): Promise<Updated>
  archive(ids: readonly string[]): Promise<Updated>
  unarchive(ids: readonly string[]): Promise<Updated>
  clicked(ids: readonly string[]): Promise<Updated>
  unsnooze(ids: readonly string[]): Promise<Updated>
  /** Hides the messages until `until` (epoch ms, in the future, at most 90 days ahead). */
  snooze(ids: readonly string[], until: number): Promise<Updated>
  readAll(filter?: InboxFilterInput): Promise<Updated>
  seenAll(filter?: InboxFilterInput): Promise<Updated>
  archiveAll(filter?: InboxFilterInput): Promise<Updated>
  /** Logged stream events after `afterSeq` (Last-Event-ID replay), as this token may see them. */
  replay(afterSeq: number): Promise<StreamEvent[]>
  /** The id of the user's latest stream event (0 before the first). */
  lastSeq(): Promise<number>
  /**
   * A live event as this token may see it, or null when it concerns another application. Never
   * rejects: an app-limited `unread_count` whose count cannot be read is left out (the next one
   * carries it). Resolve these in the order the events came, as the SSE stream does.
   */
  scope(event: StreamEvent): Promise<StreamEvent | null>
  /**
   * Several nodes on one database (PostgreSQL): calls `listener` with the user's last stream id
   * whenever any node (this one included) committed stream events of this user, so a live stream
   * can replay what another node wrote; returns the function that stops it. Null when every write
   * is this process's and reaches the local hub (SQLite).
   */
  watch(listener: (lastSeq: number) => void): (() => void) | null
}

/** Dependencies of the inboxes. */
export interface InboxServiceDeps {
  store: Store
  clock: Clock
  log: Log
  hub: InboxStreamHub
  /** Rejects with 404 unless `appId` names an application (wired to the apps table by the integrator). */
  requireApp: (appId: string) => Promise<void>
}

/** The inboxes and the snooze waker. */
export interface InboxService {
  /** The inbox of `userId` as a token limited to `appId` (null: every application) sees it. */
  of(userId: string, appId?: string | null): UserInbox
  /** Wakes every message whose snooze has ended, pushes them to live streams, and re-arms the timer. Never rejects. */
  wake(): Promise<void>
  /** Stops the wake-up timer. */
  close(): void
}

/** The longest setTimeout delay Node keeps (about 24.8 days); longer ones are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** After a failed wake-up (busy or read-only database), the next try. */
const WAKE_RETRY_MS = 30_000

const countsJson = (c: InboxCounts) => ({ unread_count: c.unreadCount, unseen_count: c.unseenCount, total: c.total })

/**
 * Builds the inboxes. Snooze wake-ups need no poll of the messages: the index on snoozed_until
 * gives the next wake-up, one timer waits for it, and every read also wakes what is due first
 * (one index probe), so a list or count never shows a message whose snooze has ended, even
 * under an injected clock or before the timer fires.
 */
export function createInboxService(deps: InboxServiceDeps): InboxService {
  const { store, clock, log, hub } = deps
  let timer: NodeJS.Timeout | null = null
  let armedFor: number | null = null
  let closed = false
  // Reads of the next wake-up, numbered as issued: one that finishes after a later-issued one is
  // stale (it may predate a snooze that the later one saw) and is dropped.
  let armsIssued = 0
  let armsApplied = 0
  // Live streams waiting for other nodes' commits, per user; one store listener for them all,
  // taken at the first watcher (docs/architecture.md: LISTEN/NOTIFY carries inbox stream notices).
  const watchers = new Map<string, Set<(lastSeq: number) => void>>()
  let unlisten: (() => void) | null = null
  const tell = (userId: string, lastSeq: number): void => {
    for (const l of watchers.get(userId) ?? []) {
      try {
        l(lastSeq)
      } catch (err) {
        log.warn({ err, user: userId }, 'inbox stream: a watcher of other nodes\' events threw')
      }
    }
  }
  // null: the listening connection came back and notices may have been lost; every watched user's
  // streams catch up to the last id the database holds.
  const noticed = (notice: { userId: string; lastSeq: number } | null): void => {
    if (notice !== null) return tell(notice.userId, notice.lastSeq)
    for (const userId of watchers.keys()) {
      store.inbox.lastSeq(userId).then(
        (seq) => tell(userId, seq),
        (err: unknown) => log.warn({ err, user: userId }, 'inbox stream: catching up after a lost connection failed'),
      )
    }
  }
  const watch = (userId: string, listener: (lastSeq: number) => void): (() => void) | null => {
    if (!store.onInboxStream || closed) return null
    unlisten ??= store.onInboxStream(noticed)
    let set = watchers.get(userId)
    if (!set) watchers.set(userId, (set = new Set()))
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0 && watchers.get(userId) === set) watchers.delete(userId)
    }
  }

  const publish = (userId: string, r: ChangeResult): Updated => {
    hub.publish(userId, r.events)
    return { updated: r.updated }
  }

  /** Arms the one timer for the wake-up at `next` (epoch ms on the clock), replacing any other. */
  const armAt = (next: number | null): void => {
    if (closed) return
    if (next === armedFor && timer !== null) return
    if (timer) clearTimeout(timer)
    timer = null
    armedFor = next
    if (next === null) return
    timer = setTimeout(() => {
      timer = null
      armedFor = null
      void wake()
    }, Math.min(Math.max(next - clock.now(), 0), MAX_TIMER_MS))
    timer.unref()
  }

  /** A busy or read-only database: try again later rather than at once (the next read or snooze also tries). */
  const retryLater = (err: unknown): void => {
    if (closed) return
    log.warn({ err }, 'inbox snooze wake-up failed; retrying')
    armAt(clock.now() + WAKE_RETRY_MS)
  }

  /** Arms the timer for the next wake-up in the store. Never rejects. */
  const arm = async (): Promise<void> => {
    if (closed) return
    const ticket = ++armsIssued
    let next: number | null
    try {
      next = await store.inbox.nextWake()
    } catch (err) {
      return retryLater(err)
    }
    if (ticket <= armsApplied) return
    armsApplied = ticket
    armAt(next)
  }

  const wakeDue = async (now: number): Promise<void> => {
    for (;;) {
      const woken = await store.inbox.wakeDue(now)
      if (woken.size === 0) return
      for (const [userId, events] of woken) hub.publish(userId, events)
    }
  }

  const wake = async (): Promise<void> => {
    try {
      await wakeDue(clock.now())
    } catch (err) {
      return retryLater(err)
    }
    await arm()
  }

  /** Wakes what is due before a read, so lists and counts are exact at `now`. */
  const catchUp = async (): Promise<void> => {
    const next = await store.inbox.nextWake()
    if (next !== null && next <= clock.now()) await wake()
  }

  const of = (userId: string, tokenApp: string | null = null): UserInbox => {
    /** The app a request may see: the token's, or the one it names (which must exist). */
    const appOf = async (requested: string | undefined | null): Promise<string | null> => {
      if (requested === undefined || requested === null) return tokenApp
      // Another application is 404, as if it did not exist, like a scoped key's filter (docs/applications.md).
      if (tokenApp !== null && requested !== tokenApp) throw errors.notFound('Application')
      await deps.requireApp(requested)
      return requested
    }
    /** The unread count this token may see, without the catch-up (its caller did it). */
    const countUnread = async (): Promise<number> =>
      tokenApp === null ? store.inbox.unreadCount(userId) : (await store.inbox.counts(userId, { appId: tokenApp }, [])).all.unreadCount
    const unreadCount = async (): Promise<number> => {
      await catchUp()
      return countUnread()
    }
    const change = (c: InboxStateChange) => async (ids: readonly string[]): Promise<Updated> => {
      await catchUp()
      return publish(userId, await store.inbox.changeState(userId, tokenApp, [...new Set(ids)], c, clock.now()))
    }
    const bulk = (c: InboxBulkChange) => async (f: InboxFilterInput = {}): Promise<Updated> => {
      await catchUp()
      const sel = { topic: f.topic ?? null, tags: f.tags ?? null, appId: await appOf(f.app_id), read: f.read ?? null }
      return publish(userId, await store.inbox.bulk(userId, c, sel, clock.now()))
    }
    /**
     * A `state` event as an app-limited token may see it. A change by ids keeps the ids of the
     * token's application (each message's application is read: an id whose message is gone
     * counts as another's); none left leaves the event out. A bulk change filtered to another
     * application is left out; one across every application is shown filtered to the token's,
     * without `updated` (which counted the other applications' messages too).
     */
    const scopeState = async (app: string, e: StreamEvent): Promise<StreamEvent | null> => {
      const { ids, filter } = e.data
      if (Array.isArray(ids)) {
        const apps = await Promise.all(ids.map(async (id) => (typeof id === 'string' ? await store.inbox.get(id) : null)))
        const kept = ids.filter((_, i) => apps[i]?.userId === userId && apps[i]?.appId === app)
        return kept.length === 0 ? null : { ...e, data: { ...e.data, ids: kept } }
      }
      if (filter === null || typeof filter !== 'object') return null
      const filterApp = (filter as Record<string, unknown>).app_id ?? null
      if (filterApp === app) return e
      if (filterApp !== null) return null
      const { updated: _counted, ...rest } = e.data
      return { ...e, data: { ...rest, filter: { ...filter, app_id: app } } }
    }
    /**
     * An app-limited token's stream: other applications' messages and changes are left out, and
     * an `unread_count` carries the count of the token's application (read when it is scoped).
     */
    const scopeEvent = async (e: StreamEvent): Promise<StreamEvent | null> => {
      if (tokenApp === null) return e
      if (e.kind === 'notification') return e.data.app_id === tokenApp ? e : null
      if (e.kind === 'unread_count') return { ...e, data: { unread_count: await countUnread() } }
      return scopeState(tokenApp, e)
    }
    return {
      async list(o = {}) {
        await catchUp()
        const page = await store.inbox.list(userId, {
          status: o.status ?? 'all',
          archived: o.archived ?? false,
          snoozed: o.snoozed ?? false,
          ...(o.topic !== undefined ? { topic: o.topic } : {}),
          ...(o.tags !== undefined ? { tags: o.tags } : {}),
          appId: await appOf(o.app_id),
          limit: pageSize(o.limit),
          cursor: o.cursor ?? null,
        })
        return { data: page.data.map(messageJson), unread_count: await countUnread(), next_cursor: page.nextCursor }
      },
      unreadCount,
      async counts(o = {}) {
        await catchUp()
        const tags = o.tags ?? []
        const { all, byTag } = await store.inbox.counts(userId, { topic: o.topic ?? null, appId: await appOf(o.app_id) }, tags)
        const by_tag: InboxCountsJson['by_tag'] = {}
        for (const t of tags) by_tag[t] = countsJson(byTag.get(t)!)
        return { ...countsJson(all), by_tag }
      },
      read: change('read'),
      unread: change('unread'),
      seen: change('seen'),
      archive: change('archive'),
      unarchive: change('unarchive'),
      clicked: change('clicked'),
      async unsnooze(ids) {
        const r = await change('unsnooze')(ids)
        await arm()
        return r
      },
      async snooze(ids, until) {
        await catchUp()
        const now = clock.now()
        if (!(until > now) || until - now > MAX_SNOOZE_MS) {
          throw errors.validation([{ field: 'until', message: 'must be in the future and at most 90 days ahead', in: 'body' }])
        }
        const r = publish(userId, await store.inbox.snooze(userId, tokenApp, [...new Set(ids)], until, now))
        await arm()
        return r
      },
      readAll: bulk('read_all'),
      seenAll: bulk('seen_all'),
      archiveAll: bulk('archive_all'),
      async replay(afterSeq) {
        const out: StreamEvent[] = []
        for (const e of await store.inbox.replay(userId, afterSeq)) {
          const scoped = await scopeEvent(e)
          if (scoped) out.push(scoped)
        }
        return out
      },
      lastSeq: () => store.inbox.lastSeq(userId),
      scope: (e) =>
        scopeEvent(e).catch((err: unknown) => {
          log.warn({ err, user: userId }, 'inbox stream: the unread count of the token application could not be read; event left out')
          return null
        }),
      watch: (listener) => watch(userId, listener),
    }
  }

  void arm()
  return {
    of,
    wake,
    close() {
      closed = true
      if (timer) clearTimeout(timer)
      timer = null
      unlisten?.()
      unlisten = null
      watchers.clear()
    },
  }
}
