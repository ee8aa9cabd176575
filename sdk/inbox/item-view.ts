import type { InboxItem } from './api.js'
import { h, icon, ICONS, relativeTime } from './dom.js'
import type { SnoozeChoice } from './policy.js'

/** What a click in an item asks the element to do. */
export type ItemAction = 'open' | 'toggle-read' | 'archive' | 'snooze-menu' | `snooze:${SnoozeChoice}`

const SNOOZE_LABELS: Record<SnoozeChoice, string> = { '1h': 'For 1 hour', tomorrow: 'Until tomorrow', week: 'Until next week' }

/**
 * Builds one list item: the main button (opens the action, or marks read), and the read,
 * snooze and archive buttons, each named with the message title for screen readers. Buttons
 * carry `data-action`; the element handles clicks by delegation.
 */
export function renderItem(item: InboxItem, now: number, locale: string | undefined): HTMLLIElement {
  const title = item.title || item.topic
  const time = h('time', { class: 'time', datetime: item.created_at }, relativeTime(item.created_at, now, locale))
  const main = h(
    'button',
    { type: 'button', class: 'open', 'data-action': 'open', 'aria-describedby': null },
    h('span', { class: 'dot', 'aria-hidden': 'true' }),
    h(
      'span',
      { class: 'text' },
      h('span', { class: 'sr' }, item.read ? '' : 'Unread: '),
      h('span', { class: 'title' }, title),
      item.body ? h('span', { class: 'body' }, item.body) : null,
      time,
      item.action_url ? h('span', { class: 'sr' }, ' (opens the link)') : null,
    ),
  )
  const act = (action: ItemAction, label: string, path: string, extra: Record<string, string> = {}) =>
    h('button', { type: 'button', class: `act ${action}`, 'data-action': action, 'aria-label': `${label}: ${title}`, title: label, ...extra }, icon(path))
  const menuId = `snooze-${item.id}`
  const menu = h(
    'div',
    { class: 'menu', id: menuId, role: 'group', 'aria-label': `Snooze ${title}`, hidden: true },
    ...(Object.keys(SNOOZE_LABELS) as SnoozeChoice[]).map((c) => h('button', { type: 'button', 'data-action': `snooze:${c}` }, SNOOZE_LABELS[c])),
  )
  const li = h(
    'li',
    { class: `item sev-${item.severity}${item.read ? '' : ' unread'}`, 'data-id': item.id, part: 'item' },
    main,
    h(
      'div',
      { class: 'actions' },
      act('toggle-read', item.read ? 'Mark as unread' : 'Mark as read', item.read ? ICONS.dot : ICONS.check),
      act('snooze-menu', 'Snooze', ICONS.clock, { 'aria-expanded': 'false', 'aria-controls': menuId }),
      act('archive', 'Archive', ICONS.archive),
    ),
    menu,
  )
  return li
}
