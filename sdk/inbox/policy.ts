import type { InboxItem } from './api.js'

/** Pure decisions of the inbox element (no DOM), unit-tested in node (docs/inbox-element.md). */

/** One tab: its label and tag (`null` for "All"). */
export interface Tab {
  label: string
  tag: string | null
}

/** Parses the `tabs` attribute: `billing, security` or `Billing=billing, Security=security`; "All" comes first. */
export function parseTabs(value: string | null): Tab[] {
  const tabs: Tab[] = [{ label: 'All', tag: null }]
  for (const part of (value ?? '').split(',')) {
    const entry = part.trim()
    if (!entry) continue
    const eq = entry.lastIndexOf('=')
    const tag = (eq === -1 ? entry : entry.slice(eq + 1)).trim().toLowerCase()
    const label = eq === -1 ? tag.charAt(0).toUpperCase() + tag.slice(1) : entry.slice(0, eq).trim()
    if (/^[a-z0-9_.:-]{1,50}$/.test(tag) && !tabs.some((t) => t.tag === tag)) tabs.push({ label: label || tag, tag })
  }
  return tabs
}

/** Only http(s) links are followed (never `javascript:` or `data:`); relative ones resolve against the page. */
export function safeActionUrl(url: string | null | undefined, base: string): string | null {
  if (!url) return null
  try {
    const u = new URL(url, base)
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null
  } catch {
    return null
  }
}

/** The snooze menu's choices. */
export type SnoozeChoice = '1h' | 'tomorrow' | 'week'

/** The moment a snooze choice stands for: an hour from `now`, or 09:00 local time tomorrow or next Monday. */
export function snoozeUntil(choice: SnoozeChoice, now: Date): Date {
  if (choice === '1h') return new Date(now.getTime() + 3_600_000)
  const d = new Date(now)
  d.setHours(9, 0, 0, 0)
  d.setDate(d.getDate() + (choice === 'tomorrow' ? 1 : (8 - d.getDay()) % 7 || 7))
  return d
}

/** List order: newest first by creation time, then by id (ids are time-sortable). */
export function newestFirst(a: InboxItem, b: InboxItem): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0
}

/**
 * Merges a freshly read page into what is shown: the page wins for its ids, messages that
 * arrived live meanwhile (and belong to the tab) stay, nothing appears twice.
 */
export function mergePage(shown: readonly InboxItem[], page: readonly InboxItem[], keep: (m: InboxItem) => boolean): InboxItem[] {
  const ids = new Set(page.map((m) => m.id))
  return [...shown.filter((m) => !ids.has(m.id) && keep(m)), ...page].sort(newestFirst)
}

/** The filter a bulk change names (`read_all`, `seen_all`, `archive_all`): null fields match anything. */
export interface BulkFilter {
  topic?: string | null
  tags?: string[] | null
  app_id?: string | null
  read?: boolean | null
}

/** Whether a message is one a bulk change's filter selects, as the server decided it. */
export function matchesFilter(m: InboxItem, f: BulkFilter): boolean {
  if (f.topic && m.topic !== f.topic) return false
  if (f.app_id && m.app_id !== f.app_id) return false
  if (f.tags && f.tags.length > 0 && !m.tags.some((t) => f.tags!.includes(t))) return false
  if (f.read !== null && f.read !== undefined && m.read !== f.read) return false
  return true
}

/**
 * Applies a `state` stream event to the shown messages: `{change, ids}` for one-by-one changes,
 * `{change, filter}` for bulk ones. Returns null when it cannot be applied locally (unarchive,
 * unsnooze, a change this version does not know): the page must be read again.
 */
export function applyStateChange(items: readonly InboxItem[], change: string, ids: readonly string[] | null, filter: BulkFilter = {}): InboxItem[] | null {
  const touched = (m: InboxItem): boolean => (ids === null ? matchesFilter(m, filter) : ids.includes(m.id))
  const set = (patch: Partial<InboxItem>) => items.map((m) => (touched(m) ? { ...m, ...patch } : m))
  if (ids !== null) {
    if (change === 'read' || change === 'clicked') return set({ read: true, seen: true })
    if (change === 'unread') return set({ read: false })
    if (change === 'seen') return set({ seen: true })
    if (change === 'archive' || change === 'snooze') return items.filter((m) => !touched(m))
    return null
  }
  if (change === 'read_all') return set({ read: true, seen: true })
  if (change === 'seen_all') return set({ seen: true })
  if (change === 'archive_all') return items.filter((m) => !touched(m))
  return null
}

/** The tab a key moves to in a tablist of `n` (arrows wrap, Home, End), or null for other keys. */
export function tabKeyTarget(key: string, index: number, n: number): number | null {
  if (key === 'ArrowRight') return (index + 1) % n
  if (key === 'ArrowLeft') return (index - 1 + n) % n
  if (key === 'Home') return 0
  if (key === 'End') return n - 1
  return null
}

/** The origin of a module URL served from a Postbox's /sdk/ (`/sdk/inbox.js` or a hashed name); null otherwise. */
export function scriptOrigin(moduleUrl: string): string | null {
  try {
    const u = new URL(moduleUrl)
    return /\/sdk\/inbox(\.[\w-]+)?\.js$/.test(u.pathname) ? u.origin : null
  } catch {
    return null
  }
}

/** A stream event's JSON data as an object; null when it is not JSON or not an object. */
export function parseEventData(text: string): Record<string, unknown> | null {
  try {
    const data: unknown = JSON.parse(text)
    return typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : null
  } catch {
    return null
  }
}
