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

/**
 * Applies a `state` stream event to the shown messages; returns null when it cannot be applied
 * locally (unarchive, unsnooze, a filtered bulk change, a change this version does not know)
 * and the page must be read again.
 */
export function applyStateChange(items: readonly InboxItem[], change: string, ids: readonly string[] | null): InboxItem[] | null {
  const touched = (m: InboxItem): boolean => ids === null || ids.includes(m.id)
  const set = (patch: Partial<InboxItem>) => items.map((m) => (touched(m) ? { ...m, ...patch } : m))
  if (change === 'read' || change === 'clicked') return set({ read: true, seen: true })
  if (change === 'unread') return set({ read: false })
  if (change === 'seen') return set({ seen: true })
  if ((change === 'archive' || change === 'snooze') && ids) return items.filter((m) => !touched(m))
  if (change === 'read_all' && ids === null) return set({ read: true, seen: true })
  return null
}
