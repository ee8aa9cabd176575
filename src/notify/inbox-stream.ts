import type { StreamEvent } from '../store/inbox.js'

/** A live SSE subscriber: receives each committed stream event of its user. */
export type StreamListener = (event: StreamEvent) => void

/** The in-process hub of live inbox streams, per user. */
export interface InboxStreamHub {
  /** Registers a listener for `userId` (`onEnd` is called by endAll); returns the unsubscribe function. */
  subscribe(userId: string, listener: StreamListener, onEnd?: () => void): () => void
  /** Pushes committed events to the user's live listeners (call after commit only). */
  publish(userId: string, events: readonly StreamEvent[]): void
  /** Live listeners of a user, or of everyone. */
  count(userId?: string): number
  /** Ends every live stream (at shutdown): calls each subscriber's `onEnd`; clients reconnect with Last-Event-ID. */
  endAll(): void
}

/** Creates an empty hub. A throwing listener is dropped so one broken stream cannot stop the others. */
export function createInboxStreamHub(): InboxStreamHub {
  const byUser = new Map<string, Set<StreamListener>>()
  const enders = new Map<StreamListener, () => void>()
  let total = 0
  const drop = (set: Set<StreamListener>, listener: StreamListener): void => {
    if (set.delete(listener)) total--
  }
  return {
    subscribe(userId, listener, onEnd) {
      let set = byUser.get(userId)
      if (!set) byUser.set(userId, (set = new Set()))
      if (!set.has(listener)) total++
      set.add(listener)
      if (onEnd) enders.set(listener, onEnd)
      return () => {
        enders.delete(listener)
        drop(set, listener)
        if (set.size === 0 && byUser.get(userId) === set) byUser.delete(userId)
      }
    },
    publish(userId, events) {
      const set = byUser.get(userId)
      if (!set || events.length === 0) return
      for (const l of [...set]) {
        try {
          for (const e of events) l(e)
        } catch {
          drop(set, l)
        }
      }
    },
    count: (userId) => (userId === undefined ? total : (byUser.get(userId)?.size ?? 0)),
    endAll() {
      for (const end of [...enders.values()]) end()
    },
  }
}
