/**
 * A server-sent-events reader over `fetch`, for the inbox stream. EventSource cannot send an
 * Authorization header, and a token in the URL would reach the server's logs, so the element
 * reads the stream itself: the token travels in a header, and `Last-Event-ID` resumes after a
 * drop (docs/inbox-element.md).
 */

/** One dispatched SSE message. */
export interface SseEvent {
  /** The `event:` field; `message` when absent. */
  event: string
  data: string
  /** The last `id:` seen on the stream so far (SSE keeps it across messages). */
  id: string | null
}

/**
 * An incremental parser of the text/event-stream format (WHATWG HTML §9.2): feed it decoded
 * chunks, it calls `onEvent` per message and `onComment` per `:` line.
 */
export class SseParser {
  private buffer = ''
  private data: string[] = []
  private event = ''
  private sawCR = false
  /** The last event id, carried over messages as EventSource does. */
  lastEventId: string | null = null

  constructor(
    private readonly onEvent: (e: SseEvent) => void,
    private readonly onComment: (text: string) => void = () => {},
  ) {}

  /** Parses one chunk; a line split across chunks is kept until its end arrives. */
  push(chunk: string): void {
    let text = chunk
    // A CRLF split across two chunks: the LF was already ended by the CR.
    if (this.sawCR && text.startsWith('\n')) text = text.slice(1)
    this.sawCR = false
    this.buffer += text
    let start = 0
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i]
      if (ch !== '\n' && ch !== '\r') continue
      this.line(this.buffer.slice(start, i))
      if (ch === '\r') {
        if (i + 1 === this.buffer.length) this.sawCR = true
        else if (this.buffer[i + 1] === '\n') i++
      }
      start = i + 1
    }
    this.buffer = this.buffer.slice(start)
  }

  private line(line: string): void {
    if (line === '') return this.dispatch()
    if (line.startsWith(':')) return this.onComment(line.slice(1).trimStart())
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') this.data.push(value)
    else if (field === 'event') this.event = value
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value
  }

  private dispatch(): void {
    if (this.data.length === 0) {
      this.event = ''
      return
    }
    const e: SseEvent = { event: this.event || 'message', data: this.data.join('\n'), id: this.lastEventId }
    this.data = []
    this.event = ''
    this.onEvent(e)
  }
}

/** Reconnect delays: 1 s doubling to 30 s, with ±20 % jitter so many pages do not reconnect in step. */
export function backoffDelay(attempt: number, rng: () => number = Math.random): number {
  const base = Math.min(30_000, 1000 * 2 ** Math.max(0, attempt))
  return Math.round(base * (0.8 + 0.4 * rng()))
}

/** Why a stream ended for good (no more reconnects). */
export type StreamStop = { reason: 'unauthorized'; status: number; code: string }

/** What `openStream` reports. */
export interface StreamHandlers {
  /** The server accepted the stream (its `: connected` comment); the backoff resets. */
  onOpen(): void
  onEvent(e: SseEvent): void
  /** The stream dropped; it reconnects after `delayMs`. */
  onDrop(delayMs: number, error: unknown): void
  /** The token was refused: nothing more until a new token is set. */
  onStop(stop: StreamStop): void
}

/** Options of `openStream`. */
export interface StreamOptions {
  url: string
  token: string
  /** Resume after this id (Last-Event-ID). */
  lastEventId?: string | null
  fetch?: typeof fetch
  /** The longest silence before the stream counts as dropped (the server sends a keepalive every 25 s). */
  idleTimeoutMs?: number
}

/**
 * Keeps one SSE stream open with reconnects: each attempt sends the last id received as
 * `Last-Event-ID`, so the server replays what was missed. Returns a function that closes it.
 */
export function openStream(opts: StreamOptions, h: StreamHandlers): () => void {
  const doFetch = opts.fetch ?? fetch.bind(globalThis)
  const idleMs = opts.idleTimeoutMs ?? 60_000
  let lastEventId = opts.lastEventId ?? null
  let closed = false
  let attempt = 0
  let controller: AbortController | null = null
  let retryTimer: ReturnType<typeof setTimeout> | null = null

  const connect = async (): Promise<void> => {
    controller = new AbortController()
    const signal = controller.signal
    let idle: ReturnType<typeof setTimeout> | null = null
    const touch = (): void => {
      if (idle) clearTimeout(idle)
      idle = setTimeout(() => controller?.abort(new Error('stream idle')), idleMs)
    }
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, accept: 'text/event-stream' }
      if (lastEventId !== null) headers['last-event-id'] = lastEventId
      touch()
      const res = await doFetch(opts.url, { headers, signal })
      if (res.status === 401 || res.status === 403) {
        const body = (await res.json().catch(() => null)) as { error?: { code?: string } } | null
        closed = true
        h.onStop({ reason: 'unauthorized', status: res.status, code: body?.error?.code ?? 'unauthorized' })
        return
      }
      if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`)
      const parser = new SseParser(
        (e) => {
          lastEventId = e.id
          h.onEvent(e)
        },
        (comment) => {
          if (comment === 'connected') {
            attempt = 0
            h.onOpen()
          }
        },
      )
      const reader = res.body.getReader()
      const decoder = new TextDecoder()
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        touch()
        parser.push(decoder.decode(value, { stream: true }))
      }
      throw new Error('stream ended')
    } catch (err) {
      if (closed) return
      const delay = backoffDelay(attempt++)
      h.onDrop(delay, err)
      retryTimer = setTimeout(() => void connect(), delay)
    } finally {
      if (idle) clearTimeout(idle)
    }
  }
  void connect()
  return () => {
    closed = true
    if (retryTimer) clearTimeout(retryTimer)
    controller?.abort()
  }
}
