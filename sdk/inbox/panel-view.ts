import type { InboxCounts, InboxItem } from './api.js'
import { h, icon, ICONS } from './dom.js'
import { renderItem } from './item-view.js'
import type { Tab } from './policy.js'
import { STYLES } from './styles.js'

/** The element's fixed parts, built once in its shadow root. */
export interface PanelElements {
  bell: HTMLButtonElement
  badge: HTMLSpanElement
  live: HTMLSpanElement
  panel: HTMLElement
  tablist: HTMLDivElement
  tabpanel: HTMLDivElement
  list: HTMLUListElement
  empty: HTMLParagraphElement
  more: HTMLButtonElement
  readAll: HTMLButtonElement
  status: HTMLParagraphElement
}

/**
 * Builds the bell (its badge hidden from screen readers, which hear the bell's label and the
 * polite live region instead) and the panel: header with "Mark all as read", tabs, the list.
 */
export function buildPanel(root: ShadowRoot): PanelElements {
  const badge = h('span', { class: 'badge', part: 'badge', 'aria-hidden': 'true', hidden: true })
  const bell = h('button', { type: 'button', class: 'bell', part: 'bell', 'aria-expanded': 'false', 'aria-controls': 'panel', 'aria-label': 'Notifications' }, icon(ICONS.bell), badge)
  const live = h('span', { class: 'sr', role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true' })
  const readAll = h('button', { type: 'button', class: 'link', 'data-action': 'read-all' }, 'Mark all as read')
  const tablist = h('div', { role: 'tablist', 'aria-label': 'Filter notifications' })
  const list = h('ul', { class: 'list', id: 'list', role: 'list', 'aria-label': 'Messages' })
  const empty = h('p', { class: 'empty', hidden: true }, 'No notifications')
  const more = h('button', { type: 'button', class: 'more', 'data-action': 'more', hidden: true }, 'Load more')
  const status = h('p', { class: 'status', role: 'status' })
  const tabpanel = h('div', { id: 'tabpanel', role: 'tabpanel' }, list, empty, more)
  const header = h('header', {}, h('h2', {}, 'Notifications'), readAll)
  const panel = h('section', { class: 'panel', id: 'panel', part: 'panel', role: 'dialog', 'aria-label': 'Notifications', hidden: true }, header, tablist, tabpanel, status)
  root.append(h('style', {}, STYLES), bell, live, panel)
  return { bell, badge, live, panel, tablist, tabpanel, list, empty, more, readAll, status }
}

/** Shows the unread count: the badge, the bell's label and the live region. */
export function showUnread(els: PanelElements, n: number): void {
  els.badge.textContent = n > 99 ? '99+' : String(n)
  els.badge.hidden = n === 0
  els.bell.setAttribute('aria-label', `Notifications, ${n === 0 ? 'none' : n} unread`)
  els.live.textContent = n === 0 ? 'No unread notifications' : `${n} unread notification${n === 1 ? '' : 's'}`
  els.readAll.disabled = n === 0
}

/** Redraws the tabs (roving tabindex, unread count per tab), keeping focus on the selected one. */
export function renderTabs(els: PanelElements, root: ShadowRoot, tabs: readonly Tab[], selectedTag: string | null, counts: InboxCounts | null, unread: number): void {
  els.tablist.hidden = tabs.length < 2
  const focused = root.activeElement?.getAttribute('role') === 'tab'
  els.tablist.replaceChildren(
    ...tabs.map((t) => {
      const c = t.tag === null ? counts : counts?.by_tag[t.tag]
      const n = c?.unread_count ?? (t.tag === null ? unread : undefined)
      const selected = t.tag === selectedTag
      return h(
        'button',
        { type: 'button', role: 'tab', part: 'tab', 'data-action': 'tab', 'data-tag': t.tag ?? '', 'aria-selected': String(selected), 'aria-controls': 'tabpanel', tabindex: selected ? '0' : '-1', id: `tab-${t.tag ?? 'all'}` },
        t.label,
        n ? h('span', { class: 'count', 'aria-hidden': 'true' }, String(n)) : null,
        n ? h('span', { class: 'sr' }, `, ${n} unread`) : null,
      )
    }),
  )
  els.tabpanel.setAttribute('aria-labelledby', `tab-${selectedTag ?? 'all'}`)
  if (focused) els.tablist.querySelector<HTMLElement>('[aria-selected="true"]')?.focus()
}

/** Redraws the list, keeping keyboard focus on the same control of the same message. */
export function renderList(els: PanelElements, root: ShadowRoot, items: readonly InboxItem[], loaded: boolean, nextCursor: string | null): void {
  const active = root.activeElement as HTMLElement | null
  const row = active?.closest<HTMLElement>('[data-id]')
  const keep = row ? { id: row.dataset.id, action: active!.dataset.action } : null
  const now = Date.now()
  const locale = document.documentElement.lang || undefined
  els.list.replaceChildren(...items.map((m) => renderItem(m, now, locale)))
  els.empty.hidden = items.length > 0 || !loaded
  els.more.hidden = nextCursor === null
  if (keep) {
    const li = [...els.list.children].find((el) => (el as HTMLElement).dataset.id === keep.id)
    li?.querySelector<HTMLElement>(`[data-action="${keep.action}"]`)?.focus()
  }
}

/** Opens a message's snooze menu (closing any other) on its first choice, or closes it. */
export function toggleSnoozeMenu(root: ShadowRoot, button: HTMLElement, id: string): void {
  const menu = root.getElementById(`snooze-${id}`)
  if (!menu) return
  const open = menu.hidden
  for (const m of root.querySelectorAll<HTMLElement>('.menu')) m.hidden = true
  for (const b of root.querySelectorAll('[data-action="snooze-menu"]')) b.setAttribute('aria-expanded', 'false')
  menu.hidden = !open
  button.setAttribute('aria-expanded', String(open))
  if (open) menu.querySelector<HTMLElement>('button')?.focus()
}

/** Escape inside a snooze menu: closes it and puts focus back on its button; false when not in one. */
export function closeSnoozeMenu(target: HTMLElement): boolean {
  const menu = target.closest<HTMLElement>('.menu')
  if (!menu) return false
  menu.hidden = true
  const button = menu.closest('li')?.querySelector<HTMLElement>('[data-action="snooze-menu"]')
  button?.setAttribute('aria-expanded', 'false')
  button?.focus()
  return true
}
