import { describe, expect, it } from 'vitest'
import type { InboxItem } from '../sdk/inbox/api.js'
import { applyStateChange, mergePage, parseTabs, safeActionUrl, snoozeUntil } from '../sdk/inbox/policy.js'
import { backoffDelay, openStream, SseParser, type SseEvent } from '../sdk/inbox/sse.js'

/** The inbox element's DOM-free parts: the SSE parser, reconnects, and its list decisions. */

const parseAll = (chunks: string[]) => {
  const events: SseEvent[] = []
  const comments: string[] = []
  const p = new SseParser((e) => events.push(e), (c) => comments.push(c))
  for (const c of chunks) p.push(c)
  return { events, comments }
}

describe('SseParser', () => {
  it('parses events, ids, comments and multi-line data', () => {
    const { events, comments } = parseAll([': connected\n\nid: 1\nevent: notification\ndata: {"a":1}\n\nid: 2\nevent: unread_count\ndata: line1\ndata: line2\n\n'])
    expect(comments).toEqual(['connected'])
    expect(events).toEqual([
      { event: 'notification', data: '{"a":1}', id: '1' },
      { event: 'unread_count', data: 'line1\nline2', id: '2' },
    ])
  })

  it('gives the same events whatever the chunking, with LF, CR or CRLF line ends', () => {
    const text = 'id: 7\nevent: state\ndata: {"change":"read"}\n\n: keepalive\n\ndata: x\n\n'
    const expected = parseAll([text]).events
    for (const eol of ['\n', '\r', '\r\n']) {
      const t = text.replace(/\n/g, eol)
      for (let size = 1; size <= 7; size++) {
        const chunks = t.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g'))!
        expect(parseAll(chunks).events, `${JSON.stringify(eol)} / ${size}`).toEqual(expected)
      }
    }
    // The id carries over to a message without its own, as EventSource's lastEventId does.
    expect(expected[1]).toEqual({ event: 'message', data: 'x', id: '7' })
  })

  it('ignores a message with no data, unknown fields and an id with NUL', () => {
    const { events } = parseAll(['event: x\n\nretry: 10\nfoo: bar\nid: a\0b\ndata: y\n\n'])
    expect(events).toEqual([{ event: 'message', data: 'y', id: null }])
  })
})

describe('backoffDelay', () => {
  it('doubles from 1 s to 30 s with ±20 % jitter', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 20].map((a) => backoffDelay(a, () => 0.5))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
    expect(backoffDelay(0, () => 0)).toBe(800)
    expect(backoffDelay(10, () => 1)).toBe(36000)
  })
})

describe('openStream', () => {
  /** A fetch that answers each call from a script and records the headers it was given. */
  const scripted = (answers: (() => Response)[]) => {
    const calls: Record<string, string>[] = []
    const f = (async (_url: string, init: RequestInit) => {
      calls.push({ ...(init.headers as Record<string, string>) })
      const next = answers.shift()
      if (!next) return new Promise<Response>(() => {})
      return next()
    }) as typeof fetch
    return { f, calls }
  }
  const sse = (text: string) => () => new Response(text, { status: 200, headers: { 'content-type': 'text/event-stream' } })

  it('resumes with the last id as Last-Event-ID after a drop, and stops on 401', async () => {
    const { f, calls } = scripted([
      sse(': connected\n\nid: 4\nevent: notification\ndata: {}\n\n'),
      sse(': connected\n\nid: 5\nevent: unread_count\ndata: {"unread_count":1}\n\n'),
      () => new Response(JSON.stringify({ error: { code: 'invalid_token', message: 'expired' } }), { status: 401 }),
    ])
    const seen: string[] = []
    const drops: number[] = []
    const stopped = new Promise<string>((resolve) => {
      openStream(
        { url: 'http://postbox.test/v1/inbox/stream', token: 'pbu_t', fetch: f },
        {
          onOpen: () => seen.push('open'),
          onEvent: (e) => seen.push(`${e.event}#${e.id}`),
          onDrop: (ms) => drops.push(ms),
          onStop: (s) => resolve(s.code),
        },
      )
    })
    expect(await stopped).toBe('invalid_token')
    expect(seen).toEqual(['open', 'notification#4', 'open', 'unread_count#5'])
    expect(calls.map((h) => [h.authorization, h['last-event-id']])).toEqual([
      ['Bearer pbu_t', undefined],
      ['Bearer pbu_t', '4'],
      ['Bearer pbu_t', '5'],
    ])
    // Each drop came right after a successful open, so the backoff restarted at about 1 s.
    expect(drops).toHaveLength(2)
    for (const d of drops) expect(d).toBeGreaterThanOrEqual(800)
    for (const d of drops) expect(d).toBeLessThanOrEqual(1200)
  }, 15_000)
})

const item = (id: string, over: Partial<InboxItem> = {}): InboxItem => ({
  id, notification_id: null, app_id: 'default', topic: 't', title: id, body: '', body_format: 'text', severity: 'info', action_url: null,
  tags: [], data: {}, seen: false, read: false, archived: false, seen_at: null, read_at: null, clicked_at: null, archived_at: null,
  snoozed_until: null, created_at: `2026-12-01T10:00:0${id.slice(-1)}.000Z`, ...over,
})

describe('the element policy', () => {
  it('parseTabs: All first, then the tags, labelled, deduplicated, invalid ones dropped', () => {
    expect(parseTabs(null)).toEqual([{ label: 'All', tag: null }])
    expect(parseTabs(' billing, Security=security ,billing, bad tag, Ops=ops.alerts,')).toEqual([
      { label: 'All', tag: null },
      { label: 'Billing', tag: 'billing' },
      { label: 'Security', tag: 'security' },
      { label: 'Ops', tag: 'ops.alerts' },
    ])
  })

  it('safeActionUrl follows http(s) only and resolves relative links', () => {
    const base = 'https://app.example.com/dashboard/'
    expect(safeActionUrl('/invoices/1', base)).toBe('https://app.example.com/invoices/1')
    expect(safeActionUrl('https://other.example.com/x?y=1', base)).toBe('https://other.example.com/x?y=1')
    for (const bad of ['javascript:alert(1)', 'JAVASCRIPT:alert(1)', 'data:text/html,x', 'vbscript:x', null, '', 'http://[bad']) expect(safeActionUrl(bad, base), String(bad)).toBeNull()
  })

  it('snoozeUntil: an hour, tomorrow 09:00, next Monday 09:00 (local time)', () => {
    const wed = new Date(2026, 11, 2, 15, 30) // a Wednesday
    expect(snoozeUntil('1h', wed).getTime() - wed.getTime()).toBe(3_600_000)
    expect(snoozeUntil('tomorrow', wed)).toEqual(new Date(2026, 11, 3, 9, 0))
    expect(snoozeUntil('week', wed)).toEqual(new Date(2026, 11, 7, 9, 0))
    expect(snoozeUntil('week', new Date(2026, 11, 7, 8, 0))).toEqual(new Date(2026, 11, 14, 9, 0))
  })

  it('mergePage keeps live arrivals, lets the page win, and repeats nothing', () => {
    const live = [item('m3'), item('m2', { read: true })]
    const page = [item('m2'), item('m1')]
    expect(mergePage(live, page, () => true).map((m) => [m.id, m.read])).toEqual([['m3', false], ['m2', false], ['m1', false]])
    expect(mergePage(live, page, (m) => m.id !== 'm3').map((m) => m.id)).toEqual(['m2', 'm1'])
  })

  it('applyStateChange applies what it knows and asks for a reload otherwise', () => {
    const items = [item('m2'), item('m1')]
    expect(applyStateChange(items, 'read', ['m1'])!.map((m) => m.read)).toEqual([false, true])
    expect(applyStateChange(items, 'clicked', ['m2'])!.map((m) => m.read)).toEqual([true, false])
    expect(applyStateChange(items, 'archive', ['m2'])!.map((m) => m.id)).toEqual(['m1'])
    expect(applyStateChange(items, 'snooze', ['m1'])!.map((m) => m.id)).toEqual(['m2'])
    for (const change of ['unarchive', 'unsnooze', 'something_new']) expect(applyStateChange(items, change, ['m1'])).toBeNull()
    expect(applyStateChange(items, 'something_new_all', null, {})).toBeNull()
  })

  it('applies a bulk change to the messages its filter selects, as the server did', () => {
    const items = [item('m4', { tags: ['billing'], topic: 'invoice' }), item('m3', { tags: ['security'], read: true }), item('m2', { app_id: 'acme' }), item('m1', { tags: ['billing', 'security'] })]
    const ids = (list: InboxItem[] | null, pick: (m: InboxItem) => boolean) => list!.filter(pick).map((m) => m.id)
    expect(ids(applyStateChange(items, 'read_all', null, { topic: null, tags: null, app_id: null, read: null }), (m) => m.read)).toEqual(['m4', 'm3', 'm2', 'm1'])
    expect(ids(applyStateChange(items, 'read_all', null, { tags: ['billing'] }), (m) => m.read)).toEqual(['m4', 'm3', 'm1'])
    expect(ids(applyStateChange(items, 'seen_all', null, { app_id: 'acme' }), (m) => m.seen)).toEqual(['m2'])
    expect(ids(applyStateChange(items, 'archive_all', null, { read: true }), () => true)).toEqual(['m4', 'm2', 'm1'])
    expect(ids(applyStateChange(items, 'archive_all', null, { tags: ['security'], topic: 't' }), () => true)).toEqual(['m4', 'm2'])
  })
})
