import { createRoute, z } from '@hono/zod-openapi'
import type { Context, MiddlewareHandler } from 'hono'
import { streamSSE } from 'hono/streaming'
import { AppError, errors } from '../errors.js'
import type { StreamEvent } from '../store/inbox.js'
import type { UserInbox } from '../notify/service.js'
import {
  InboxCountsOut,
  InboxCountsQuery,
  InboxFilterIn,
  InboxIds,
  InboxList,
  InboxQuery,
  InboxSnoozeIn,
  InboxUpdated,
  UnreadCount,
} from '../notify/inbox-schemas.js'
import { bearerToken } from './auth.js'
import { DEFAULT_LIMIT, ErrorBody, errorResponses, jsonBody, jsonResponse, newRouter } from './common.js'
import type { ApiEnv } from './deps.js'
import { notifyOf } from './directory.js'

const StreamQuery = z.object({
  token: z.string().max(2048).optional().openapi({ param: { name: 'token', in: 'query' }, description: 'The user token, for EventSource (this route only)' }),
  since: z.string().regex(/^\d{1,15}$/).optional().openapi({ param: { name: 'since', in: 'query' }, description: 'Replay events after this id' }),
})

/**
 * The caller's inbox from a user token (`Authorization: Bearer pbu_…` or `?token=` for
 * EventSource). Every inbox operation is scoped to the token's user, so another user's ids
 * are simply not found.
 */
function inboxOf(c: Context<ApiEnv>): { userId: string; inbox: UserInbox } {
  const userId = c.get('inboxUser')
  return { userId, inbox: notifyOf(c).inbox(userId, c.get('inboxApp')) }
}

/** Open live streams one user may hold (browser tabs, devices); more answer 429 `rate_limited`. */
export const MAX_STREAMS_PER_USER = 16
/** Open live streams in all; more answer 503 `unavailable` (each holds a socket and a timer). */
export const MAX_STREAMS = 10_000
/** The longest setTimeout delay Node keeps (about 24.8 days); longer ones fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Checks the user token of /v1/inbox before anything else (the body guard included), as the
 * key routes do: a caller without a valid token learns 401, never whether its query or body
 * would have been valid. `?token=` is read on the stream only, for EventSource (which cannot
 * send headers), so tokens stay out of the URLs (and logs) of the other routes.
 */
export const userToken: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const fromQuery = c.req.path === '/v1/inbox/stream' ? c.req.query('token') : undefined
  const token = bearerToken(c.req.header('authorization')) ?? fromQuery
  if (token === undefined) throw errors.unauthorized('Missing user token')
  const claims = token === '' ? null : notifyOf(c).tokens.verify(token)
  if (!claims) throw errors.invalidToken('Invalid or expired user token')
  c.set('inboxUser', claims.userId)
  c.set('inboxApp', claims.appId)
  c.set('inboxTokenExpires', claims.expiresAt)
  await next()
}

// The token is checked by `userToken`, mounted before the body guard in createApp.
const base = { security: [{ userToken: [] }], tags: ['inbox'] }

const stateRoute = (name: string, summary: string) =>
  createRoute({
    ...base, method: 'post', path: `/v1/inbox/${name}`, operationId: `inbox${name[0]!.toUpperCase()}${name.slice(1)}`, summary,
    request: { body: jsonBody(InboxIds) },
    responses: { 200: jsonResponse(InboxUpdated, 'how many of your messages changed'), ...errorResponses },
  })

const bulkRoute = (name: string, summary: string) =>
  createRoute({
    ...base, method: 'post', path: `/v1/inbox/${name}`, operationId: `inbox${name.split('-').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`, summary,
    request: { body: jsonBody(InboxFilterIn, false) },
    responses: { 200: jsonResponse(InboxUpdated, 'how many messages changed'), ...errorResponses },
  })

const routes = {
  list: createRoute({
    ...base, method: 'get', path: '/v1/inbox', operationId: 'listInbox', summary: 'Your inbox, newest first',
    request: { query: InboxQuery },
    responses: { 200: jsonResponse(InboxList, 'a page and the exact unread count'), ...errorResponses },
  }),
  unreadCount: createRoute({
    ...base, method: 'get', path: '/v1/inbox/unread-count', operationId: 'getInboxUnreadCount', summary: 'Your unread count',
    responses: { 200: jsonResponse(UnreadCount, 'exact over the whole non-archived inbox'), ...errorResponses },
  }),
  read: stateRoute('read', 'Mark messages read'),
  unread: stateRoute('unread', 'Mark messages unread'),
  seen: stateRoute('seen', 'Mark messages seen'),
  archive: stateRoute('archive', 'Archive messages'),
  unarchive: stateRoute('unarchive', 'Unarchive messages'),
  clicked: stateRoute('clicked', 'Record a click on messages (also marks them read)'),
  unsnooze: stateRoute('unsnooze', 'Show snoozed messages again now'),
  snooze: createRoute({
    ...base, method: 'post', path: '/v1/inbox/snooze', operationId: 'inboxSnooze', summary: 'Hide messages until a time (at most 90 days ahead); they come back unread',
    request: { body: jsonBody(InboxSnoozeIn) },
    responses: { 200: jsonResponse(InboxUpdated, 'how many of your messages changed'), ...errorResponses },
  }),
  readAll: bulkRoute('read-all', 'Mark everything the filter selects read'),
  seenAll: bulkRoute('seen-all', 'Mark everything the filter selects seen'),
  archiveAll: bulkRoute('archive-all', 'Archive everything the filter selects ({read: true}: only read messages)'),
  counts: createRoute({
    ...base, method: 'get', path: '/v1/inbox/counts', operationId: 'getInboxCounts', summary: 'Exact counts of the visible messages, and per tag (tabs)',
    request: { query: InboxCountsQuery },
    responses: { 200: jsonResponse(InboxCountsOut, 'counts over the non-archived, non-snoozed messages'), ...errorResponses },
  }),
  stream: createRoute({
    ...base, method: 'get', path: '/v1/inbox/stream', operationId: 'streamInbox',
    summary: 'Live updates over SSE: notification, state and unread_count events; Last-Event-ID or ?since= replays',
    request: {
      query: StreamQuery,
      headers: z.object({
        'last-event-id': z.string().max(100).optional().openapi({ description: 'The last event id received; replays what came after it' }),
      }),
    },
    responses: {
      200: { content: { 'text/event-stream': { schema: z.string() } }, description: 'an event stream' },
      ...errorResponses,
      429: jsonResponse(ErrorBody, `rate_limited: this user already holds ${MAX_STREAMS_PER_USER} open streams`),
      503: jsonResponse(ErrorBody, 'unavailable: the server holds its maximum of open streams'),
    },
  }),
}

/** The end-user inbox routes (docs/notifications.md), authenticated by user token. */
export function inboxRoutes() {
  const r = newRouter()
  r.openAPIRegistry.registerComponent('securitySchemes', 'userToken', { type: 'http', scheme: 'bearer', description: 'pbu_ end-user token' })
  r.openapi(routes.list, async (c) => {
    const q = c.req.valid('query')
    const { inbox } = inboxOf(c)
    const page = await inbox.list({
      status: q.status ?? 'all',
      archived: q.archived === 'true',
      snoozed: q.snoozed === 'true',
      ...(q.topic !== undefined ? { topic: q.topic } : {}),
      ...(q.tags !== undefined ? { tags: q.tags } : {}),
      ...(q.app_id !== undefined ? { app_id: q.app_id } : {}),
      limit: q.limit ?? DEFAULT_LIMIT,
      cursor: q.cursor ?? null,
    })
    return c.json(page, 200)
  })
  r.openapi(routes.unreadCount, async (c) => c.json({ unread_count: await inboxOf(c).inbox.unreadCount() }, 200))
  r.openapi(routes.counts, async (c) => {
    const q = c.req.valid('query')
    return c.json(
      await inboxOf(c).inbox.counts({
        ...(q.tags !== undefined ? { tags: q.tags } : {}),
        ...(q.topic !== undefined ? { topic: q.topic } : {}),
        ...(q.app_id !== undefined ? { app_id: q.app_id } : {}),
      }),
      200,
    )
  })
  for (const name of ['read', 'unread', 'seen', 'archive', 'unarchive', 'clicked', 'unsnooze'] as const) {
    r.openapi(routes[name], async (c) => c.json(await inboxOf(c).inbox[name](c.req.valid('json').ids), 200))
  }
  r.openapi(routes.snooze, async (c) => {
    const body = c.req.valid('json')
    return c.json(await inboxOf(c).inbox.snooze(body.ids, Date.parse(body.until)), 200)
  })
  r.openapi(routes.readAll, async (c) => c.json(await inboxOf(c).inbox.readAll(c.req.valid('json') ?? {}), 200))
  r.openapi(routes.seenAll, async (c) => c.json(await inboxOf(c).inbox.seenAll(c.req.valid('json') ?? {}), 200))
  r.openapi(routes.archiveAll, async (c) => c.json(await inboxOf(c).inbox.archiveAll(c.req.valid('json') ?? {}), 200))
  r.openapi(routes.stream, (c) => streamInbox(c, c.req.valid('query').since) as never)
  return r
}

/** Writes one logged event as an SSE message. */
const toSse = (e: StreamEvent) => ({ id: String(e.seq), event: e.kind, data: JSON.stringify(e.data) })

/**
 * The SSE stream: subscribe to the live hub first, then replay the durable log after
 * Last-Event-ID / ?since=, then forward live events, skipping any the replay already sent
 * (seq is per-user increasing, so one comparison dedupes the overlap).
 *
 * With several nodes on one database (`inbox.watch` is not null: PostgreSQL), another node's
 * commits reach this stream as notices `(lastSeq)`, and the stream reads them from the database.
 * A user's ids are taken under their counter's row lock (store/pg/schema-directory.ts), so
 * commits of one user are in id order and every read sees a gapless prefix. One chain handles
 * local events and notices in the order they arrive, keeping `known`, the id up to which every
 * event was queued (or left out by the token's scope): a local event at `known + 1` is queued
 * as it is; one further ahead, or a notice beyond `known`, replays after `known` first. So no
 * event is sent twice, none out of order, and none skipped when a notice comes after a later
 * local event.
 */
function streamInbox(c: Context<ApiEnv>, sinceQuery: string | undefined): Response {
  const { userId, inbox } = inboxOf(c)
  const notify = notifyOf(c)
  const lastEventId = c.req.header('last-event-id')
  const since = /^\d{1,15}$/.test(lastEventId ?? '') ? Number(lastEventId) : sinceQuery !== undefined ? Number(sinceQuery) : null
  if (notify.stream.count(userId) >= MAX_STREAMS_PER_USER) {
    throw new AppError('rate_limited', 429, `Too many open streams for this user (at most ${MAX_STREAMS_PER_USER}); close one first`)
  }
  if (notify.stream.count() >= MAX_STREAMS) throw errors.unavailable('Too many open streams on this server; try again later')
  return streamSSE(c, async (stream) => {
    const queue: StreamEvent[] = []
    let wake: (() => void) | null = null
    let closed = false
    // Live events are scoped (an asynchronous read for a scoped token) one after another, so they
    // reach the queue in the order the hub sent them: the seq comparison below relies on it.
    let scoping: Promise<void> = Promise.resolve()
    // Events still being scoped count toward the limit: a burst is all waiting there at first.
    let scopingCount = 0
    const notifyLoop = () => {
      const w = wake
      wake = null
      w?.()
    }
    const end = (): void => {
      closed = true
      notifyLoop()
    }
    /** Runs `work` after every earlier step of this stream; a failure ends the stream (the client reconnects). */
    const step = (work: () => Promise<void>): Promise<void> => (scoping = scoping.then(work).catch(end))
    // Several nodes: every id up to `known` is queued or out of scope; the highest noticed id.
    let known = 0
    let noticedSeq = 0
    let catchUpQueued = false
    /** Queues the events after `known` from the database, which holds at least every id up to `atLeast`. */
    const catchUp = async (atLeast: number): Promise<void> => {
      if (atLeast <= known || closed) return
      for (const e of await inbox.replay(known)) {
        if (e.seq <= known) continue
        queue.push(e)
        known = e.seq
      }
      known = Math.max(known, atLeast)
      notifyLoop()
    }
    const unwatch = inbox.watch((lastSeq) => {
      noticedSeq = Math.max(noticedSeq, lastSeq)
      if (lastSeq <= known || catchUpQueued) return
      catchUpQueued = true
      void step(async () => {
        catchUpQueued = false
        await catchUp(noticedSeq)
      })
    })
    const multiNode = unwatch !== null
    const unsubscribe = notify.stream.subscribe(
      userId,
      (e) => {
        // A client too slow to take its events is cut off rather than buffered without bound; it
        // reconnects with Last-Event-ID and the durable log replays what it missed.
        if (queue.length + scopingCount >= notify.streamMaxQueued) return end()
        scopingCount++
        void step(async () => {
          try {
            if (multiNode) {
              if (e.seq <= known) return
              // Another node's commit came before this one and its notice is still on the way.
              if (e.seq !== known + 1) return await catchUp(e.seq)
              known = e.seq
            }
            const scoped = await inbox.scope(e)
            if (scoped === null || closed) return
            queue.push(scoped)
            notifyLoop()
          } finally {
            scopingCount--
          }
        })
      },
      end,
    )
    const expires = c.get('inboxTokenExpires')
    const { clock } = c.get('deps')
    // The token was checked at connect; the stream ends when it expires.
    let expiry: NodeJS.Timeout | null = null
    const endAtExpiry = (): void => {
      const left = expires - clock.now()
      if (left <= 0) end()
      else expiry = setTimeout(endAtExpiry, Math.min(left, MAX_TIMER_MS))
    }
    endAtExpiry()
    const keepalive = setInterval(() => {
      if (clock.now() >= expires) return end()
      void stream.write(': keepalive\n\n').catch(() => {})
    }, notify.streamKeepaliveMs)
    stream.onAbort(end)
    try {
      let last = -1
      if (multiNode) {
        // The starting point is read before `connected`, so whatever a client does after it is
        // past it; the replay after Last-Event-ID runs in the chain, before later live events.
        const start = since
        await step(async () => {
          const newest = await inbox.lastSeq()
          // An id from the future (a stale client, a restored backup) must not hide new events.
          known = start === null ? newest : Math.min(start, newest)
          await catchUp(newest)
          if (noticedSeq > known) await catchUp(noticedSeq)
        })
        await stream.write(': connected\n\n')
      } else {
        await stream.write(': connected\n\n')
        if (since !== null) {
          // An id from the future (a stale client, a restored backup) must not hide new events.
          last = Math.min(since, await inbox.lastSeq())
          for (const e of await inbox.replay(since)) {
            await stream.writeSSE(toSse(e))
            last = e.seq
          }
        }
      }
      while (!closed && !stream.aborted) {
        while (queue.length > 0) {
          // Nothing more once the token has expired, whichever timer notices first.
          if (clock.now() >= expires) return
          const e = queue.shift()!
          if (e.seq <= last) continue
          await stream.writeSSE(toSse(e))
          last = e.seq
        }
        if (closed || stream.aborted) break
        await new Promise<void>((resolve) => (wake = resolve))
      }
    } finally {
      clearInterval(keepalive)
      if (expiry) clearTimeout(expiry)
      unsubscribe()
      unwatch?.()
    }
  })
}
