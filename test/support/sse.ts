/** One server-sent event message (a `:` comment line is kept in `comment`). */
export interface SseMessage {
  id?: string
  event?: string
  data?: string
  comment?: string
}

/** Reads SSE messages from a streaming fetch response: `next(pred)` skips to the next match (default: one with an id). */
export function sseReader(res: Response) {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const queue: SseMessage[] = []
  const parse = (block: string): SseMessage => {
    const msg: SseMessage = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) msg.comment = line.slice(1).trim()
      const m = /^(id|event|data): ?(.*)$/.exec(line)
      if (m) msg[m[1] as 'id' | 'event' | 'data'] = m[2]
    }
    return msg
  }
  /** The next message matching `pred`, skipping others. */
  async function next(pred: (m: SseMessage) => boolean = (m) => m.id !== undefined): Promise<SseMessage> {
    for (;;) {
      const i = queue.findIndex(pred)
      if (i >= 0) return queue.splice(0, i + 1).pop()!
      queue.length = 0
      const { value, done } = await reader.read()
      if (done) throw new Error('stream ended')
      buffer += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        queue.push(parse(buffer.slice(0, cut)))
        buffer = buffer.slice(cut + 2)
      }
    }
  }
  return { next, cancel: () => reader.cancel() }
}
