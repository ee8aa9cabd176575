import { InboxApi, type InboxCounts, type InboxItem } from './api.js'
import { h, icon, ICONS } from './dom.js'
import { renderItem } from './item-view.js'
import { applyStateChange, mergePage, type BulkFilter, newestFirst, parseTabs, safeActionUrl, snoozeUntil, type SnoozeChoice, type Tab } from './policy.js'
import { openStream, type SseEvent } from './sse.js'
import { STYLES } from './styles.js'

/**
 * `<postbox-inbox server="…" token="…" tabs="billing,security">`: a bell with the unread count
 * and a panel listing the user's messages, live over the inbox stream. Framework-free, in an
 * open shadow root, themed with `--postbox-*` custom properties (docs/inbox-element.md).
 *
 * Events (bubbling, composed): `postbox:notification` {item}, `postbox:unread` {unread},
 * `postbox:action` {item, url} (cancelable: call preventDefault() to route it yourself),
 * `postbox:error` {code, status} (e.g. `invalid_token` when the token expired: set a new one).
 */

/** Where the module was loaded from: the default `server` when it came from a Postbox's /sdk/. */
const SCRIPT_ORIGIN = ((): string | null => {
  try {
    const u = new URL(import.meta.url)
    return /\/sdk\/inbox(\.[\w-]+)?\.js$/.test(u.pathname) ? u.origin : null
  } catch {
    return null
  }
})()

/** How long to wait after a burst of stream events before asking for the tab counts again. */
const COUNTS_DEBOUNCE_MS = 200

/** The `<postbox-inbox>` custom element. */
export class PostboxInbox extends HTMLElement {
  /** Attributes whose change re-renders or reconnects. */
  static readonly observedAttributes = ['server', 'token', 'tabs', 'open']

  private readonly root: ShadowRoot
  private readonly els: {
    bell: HTMLButtonElement
    badge: HTMLSpanElement
    live: HTMLSpanElement
    panel: HTMLElement
    tablist: HTMLDivElement
    list: HTMLUListElement
    empty: HTMLParagraphElement
    more: HTMLButtonElement
    readAll: HTMLButtonElement
    status: HTMLParagraphElement
  }
  private api: InboxApi | null = null
  private closeStream: (() => void) | null = null
  private items: InboxItem[] = []
  private nextCursor: string | null = null
  private unread = 0
  private counts: InboxCounts | null = null
  private tabs: Tab[] = parseTabs(null)
  private tab: string | null = null
  private lastEventId: string | null = null
  private loaded = false
  private generation = 0
  private countsTimer: ReturnType<typeof setTimeout> | null = null
  private readonly onDocClick = (e: MouseEvent): void => {
    if (this.isOpen && !e.composedPath().includes(this)) this.setOpen(false, false)
  }

  constructor() {
    super()
    this.root = this.attachShadow({ mode: 'open' })
    const style = h('style', {}, STYLES)
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
    const panel = h('section', { class: 'panel', id: 'panel', part: 'panel', role: 'dialog', 'aria-label': 'Notifications', hidden: true }, h('header', {}, h('h2', {}, 'Notifications'), readAll), tablist, tabpanel, status)
    this.root.append(style, bell, live, panel)
    this.els = { bell, badge, live, panel, tablist, list, empty, more, readAll, status }
    bell.addEventListener('click', () => this.setOpen(!this.isOpen, true))
    this.root.addEventListener('click', (e) => this.onClick(e as MouseEvent))
    this.root.addEventListener('keydown', (e) => this.onKey(e as KeyboardEvent))
  }

  /** The user token (`pbu_…`); setting it reconnects. Prefer the property to keep it out of the DOM. */
  get token(): string {
    return this.getAttribute('token') ?? this.tokenValue
  }
  set token(value: string) {
    this.tokenValue = value
    this.restart()
  }
  private tokenValue = ''

  /** The Postbox origin; by default where this script was loaded from. */
  get server(): string {
    return (this.getAttribute('server') ?? SCRIPT_ORIGIN ?? location.origin).replace(/\/+$/, '')
  }

  /** The exact unread count shown on the badge. */
  get unreadCount(): number {
    return this.unread
  }

  /** Whether the panel is open. */
  get isOpen(): boolean {
    return this.hasAttribute('open')
  }

  connectedCallback(): void {
    this.renderTabs()
    document.addEventListener('click', this.onDocClick)
    if (this.isOpen) this.els.panel.hidden = false
    this.restart()
  }

  disconnectedCallback(): void {
    document.removeEventListener('click', this.onDocClick)
    this.stop()
  }

  attributeChangedCallback(name: string, old: string | null, value: string | null): void {
    if (old === value || !this.isConnected) return
    if (name === 'open') {
      this.els.panel.hidden = value === null
      this.els.bell.setAttribute('aria-expanded', String(value !== null))
      if (value !== null) this.markSeen()
    } else if (name === 'tabs') {
      this.tabs = parseTabs(value)
      if (!this.tabs.some((t) => t.tag === this.tab)) this.tab = null
      this.renderTabs()
      void this.reload()
    } else this.restart()
  }

  /** Loads the list and counts again. */
  async refresh(): Promise<void> {
    await this.reload()
  }

  private stop(): void {
    this.generation++
    this.closeStream?.()
    this.closeStream = null
    if (this.countsTimer) clearTimeout(this.countsTimer)
  }

  /** (Re)connects with the current server and token, from a clean state. */
  private restart(): void {
    if (!this.isConnected) return
    this.stop()
    this.items = []
    this.nextCursor = null
    this.lastEventId = null
    this.loaded = false
    this.counts = null
    const token = this.token
    if (!token) {
      this.api = null
      this.setStatus('')
      return this.render()
    }
    const gen = this.generation
    this.api = new InboxApi(this.server, token)
    this.setStatus('Connecting…')
    let firstOpen = true
    this.closeStream = openStream(
      { url: `${this.server}/v1/inbox/stream`, token, lastEventId: this.lastEventId },
      {
        onOpen: () => {
          if (gen !== this.generation) return
          this.setStatus('')
          // The stream is subscribed before it says "connected": a list read now misses nothing.
          if (firstOpen) void this.reload()
          firstOpen = false
        },
        onEvent: (e) => gen === this.generation && this.onStreamEvent(e),
        onDrop: () => {
          if (gen !== this.generation) return
          this.setStatus('Reconnecting…')
          if (firstOpen && !this.loaded) void this.reload()
        },
        onStop: (stop) => {
          if (gen !== this.generation) return
          this.setStatus('Signed out of notifications')
          this.emit('postbox:error', { code: stop.code, status: stop.status })
        },
      },
    )
  }

  /** Reads the first page of the current tab and the counts. */
  private async reload(): Promise<void> {
    const api = this.api
    if (!api) return
    const gen = this.generation
    try {
      const page = await api.list(this.tab, null)
      if (gen !== this.generation || api !== this.api) return
      // Keep messages that arrived live while the page was on its way.
      this.items = mergePage(this.items, page.data, (m) => this.inTab(m))
      this.nextCursor = page.next_cursor
      this.setUnread(page.unread_count)
      this.loaded = true
      this.render()
      if (this.isOpen) this.markSeen()
      this.emit('postbox:ready', { unread: this.unread })
    } catch (err) {
      this.fail(err)
    }
    await this.loadCounts()
  }

  private async loadMore(): Promise<void> {
    if (!this.api || !this.nextCursor) return
    try {
      const page = await this.api.list(this.tab, this.nextCursor)
      const ids = new Set(this.items.map((m) => m.id))
      this.items = [...this.items, ...page.data.filter((m) => !ids.has(m.id))]
      this.nextCursor = page.next_cursor
      this.render()
    } catch (err) {
      this.fail(err)
    }
  }

  private async loadCounts(): Promise<void> {
    if (!this.api) return
    try {
      const counts = await this.api.counts(this.tabs.flatMap((t) => (t.tag ? [t.tag] : [])))
      this.counts = counts
      if (counts) this.setUnread(counts.unread_count)
      this.renderTabs()
    } catch (err) {
      this.fail(err)
    }
  }

  private scheduleCounts(): void {
    if (this.countsTimer) clearTimeout(this.countsTimer)
    this.countsTimer = setTimeout(() => void this.loadCounts(), COUNTS_DEBOUNCE_MS)
  }

  /** Applies one stream event; a replay after a reconnect repeats nothing (messages are keyed by id). */
  private onStreamEvent(e: SseEvent): void {
    this.lastEventId = e.id
    let data: Record<string, unknown>
    try {
      data = JSON.parse(e.data) as Record<string, unknown>
    } catch {
      return
    }
    if (e.event === 'notification') {
      const item = data as unknown as InboxItem
      if (typeof item.id !== 'string') return
      const known = this.items.findIndex((m) => m.id === item.id)
      if (known >= 0) this.items[known] = item
      else if (!item.archived && this.inTab(item)) this.items = [item, ...this.items].sort(newestFirst)
      if (known < 0) this.emit('postbox:notification', { item })
      this.render()
    } else if (e.event === 'unread_count' && typeof data.unread_count === 'number') {
      this.setUnread(data.unread_count)
    } else if (e.event === 'state') {
      const filter = typeof data.filter === 'object' && data.filter !== null ? (data.filter as BulkFilter) : {}
      this.applyState(String(data.change), Array.isArray(data.ids) ? (data.ids as string[]) : null, filter)
    }
    this.scheduleCounts()
  }

  /** A state change made elsewhere (another tab, another device) or here. */
  private applyState(change: string, ids: string[] | null, filter: BulkFilter): void {
    const next = applyStateChange(this.items, change, ids, filter)
    if (next === null) return void this.reload()
    this.items = next
    this.render()
  }

  private inTab(m: InboxItem): boolean {
    return this.tab === null || !Array.isArray(m.tags) || m.tags.includes(this.tab)
  }

  private setUnread(n: number): void {
    if (n === this.unread && this.loaded) return
    this.unread = n
    const label = n === 0 ? 'No unread notifications' : `${n} unread notification${n === 1 ? '' : 's'}`
    this.els.badge.textContent = n > 99 ? '99+' : String(n)
    this.els.badge.hidden = n === 0
    this.els.bell.setAttribute('aria-label', `Notifications, ${n === 0 ? 'none' : n} unread`)
    this.els.live.textContent = label
    this.els.readAll.disabled = n === 0
    this.emit('postbox:unread', { unread: n })
  }

  private setStatus(text: string): void {
    this.els.status.textContent = text
  }

  private fail(err: unknown): void {
    const e = err as { code?: string; status?: number }
    this.emit('postbox:error', { code: e.code ?? 'network_error', status: e.status ?? 0 })
    if (e.status === 401) this.setStatus('Signed out of notifications')
  }

  private emit(type: string, detail: unknown, cancelable = false): boolean {
    return this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true, cancelable }))
  }

  private setOpen(open: boolean, focus: boolean): void {
    this.toggleAttribute('open', open)
    if (open && focus) (this.els.list.querySelector<HTMLElement>('button.open') ?? this.els.tablist.querySelector<HTMLElement>('[aria-selected="true"]'))?.focus()
    if (!open && focus) this.els.bell.focus()
  }

  /** Opened: what is shown has been seen. */
  private markSeen(): void {
    const ids = this.items.filter((m) => !m.seen).map((m) => m.id)
    if (!this.api || ids.length === 0) return
    this.items = this.items.map((m) => ({ ...m, seen: true }))
    void this.api.change('seen', ids).catch((err: unknown) => this.fail(err))
  }

  private onClick(e: MouseEvent): void {
    const button = (e.target as Element).closest<HTMLElement>('[data-action]')
    if (!button || !this.api) return
    const action = button.dataset.action!
    const id = button.closest<HTMLElement>('[data-id]')?.dataset.id
    const item = id ? this.items.find((m) => m.id === id) : undefined
    if (action === 'read-all') return void this.readAll()
    if (action === 'more') return void this.loadMore()
    if (action === 'tab') return this.selectTab(button.dataset.tag || null, true)
    if (!item) return
    if (action === 'open') this.open(item)
    else if (action === 'toggle-read') this.changeOne(item, item.read ? 'unread' : 'read')
    else if (action === 'archive') this.changeOne(item, 'archive')
    else if (action === 'snooze-menu') this.toggleMenu(button, item.id)
    else if (action.startsWith('snooze:')) void this.snooze(item, action.slice(7) as SnoozeChoice)
  }

  /** The main click: records it, then follows `action_url` (or only marks read when there is none). */
  private open(item: InboxItem): void {
    const url = safeActionUrl(item.action_url, document.baseURI)
    this.optimistic(item, { read: true, seen: true })
    void this.api!.clicked([item.id]).catch((err: unknown) => this.fail(err))
    if (!url) return
    if (!this.emit('postbox:action', { item, url }, true)) return
    const target = this.getAttribute('target') ?? '_self'
    if (target === '_self') location.assign(url)
    else window.open(url, target, 'noopener')
  }

  private changeOne(item: InboxItem, change: 'read' | 'unread' | 'archive'): void {
    if (change === 'archive') this.removeItem(item)
    else this.optimistic(item, { read: change === 'read', seen: true })
    void this.api!.change(change, [item.id]).catch((err: unknown) => this.fail(err))
  }

  private async snooze(item: InboxItem, choice: SnoozeChoice): Promise<void> {
    this.removeItem(item)
    await this.api!.snooze([item.id], snoozeUntil(choice, new Date())).catch((err: unknown) => {
      this.fail(err)
      void this.reload()
    })
  }

  private async readAll(): Promise<void> {
    const tab = this.tab
    this.items = this.items.map((m) => ({ ...m, read: true, seen: true }))
    if (tab === null) this.setUnread(0)
    this.render()
    await this.api!.readAll(tab).catch((err: unknown) => this.fail(err))
  }

  /** Shows a change at once; the stream's `unread_count` then confirms the exact number. */
  private optimistic(item: InboxItem, patch: Partial<InboxItem>): void {
    const wasUnread = !item.read
    this.items = this.items.map((m) => (m.id === item.id ? { ...m, ...patch } : m))
    if (patch.read !== undefined && wasUnread === patch.read) this.setUnread(Math.max(0, this.unread + (patch.read ? -1 : 1)))
    this.render()
  }

  private removeItem(item: InboxItem): void {
    const index = this.items.findIndex((m) => m.id === item.id)
    this.items = this.items.filter((m) => m.id !== item.id)
    if (!item.read) this.setUnread(Math.max(0, this.unread - 1))
    this.render()
    // Keyboard users land on the next message rather than on nothing.
    const next = this.els.list.querySelectorAll<HTMLElement>('button.open')[Math.min(index, this.items.length - 1)]
    ;(next ?? this.els.bell).focus()
  }

  private toggleMenu(button: HTMLElement, id: string): void {
    const menu = this.root.getElementById(`snooze-${id}`)
    if (!menu) return
    const open = menu.hidden
    for (const m of this.root.querySelectorAll<HTMLElement>('.menu')) m.hidden = true
    for (const b of this.root.querySelectorAll('[data-action="snooze-menu"]')) b.setAttribute('aria-expanded', 'false')
    menu.hidden = !open
    button.setAttribute('aria-expanded', String(open))
    if (open) menu.querySelector<HTMLElement>('button')?.focus()
  }

  private selectTab(tag: string | null, focus: boolean): void {
    if (tag === this.tab) return
    this.tab = tag
    this.items = []
    this.nextCursor = null
    this.renderTabs()
    this.render()
    if (focus) this.els.tablist.querySelector<HTMLElement>('[aria-selected="true"]')?.focus()
    void this.reload()
  }

  private onKey(e: KeyboardEvent): void {
    const target = e.target as HTMLElement
    if (e.key === 'Escape') {
      const menu = target.closest<HTMLElement>('.menu')
      if (menu) {
        menu.hidden = true
        menu.closest('li')?.querySelector<HTMLElement>('[data-action="snooze-menu"]')?.focus()
      } else if (this.isOpen) this.setOpen(false, true)
      e.preventDefault()
      return
    }
    if (target.getAttribute('role') === 'tab') {
      const tabs = [...this.els.tablist.querySelectorAll<HTMLElement>('[role="tab"]')]
      const i = tabs.indexOf(target)
      const j = e.key === 'ArrowRight' ? (i + 1) % tabs.length : e.key === 'ArrowLeft' ? (i - 1 + tabs.length) % tabs.length : e.key === 'Home' ? 0 : e.key === 'End' ? tabs.length - 1 : -1
      if (j >= 0) {
        e.preventDefault()
        this.selectTab(tabs[j]!.dataset.tag || null, true)
      }
    }
  }

  private renderTabs(): void {
    const list = this.els.tablist
    list.hidden = this.tabs.length < 2
    const focused = this.root.activeElement?.getAttribute('role') === 'tab'
    list.replaceChildren(
      ...this.tabs.map((t) => {
        const c = t.tag === null ? this.counts : this.counts?.by_tag[t.tag]
        const unread = c?.unread_count ?? (t.tag === null ? this.unread : undefined)
        const selected = t.tag === this.tab
        return h(
          'button',
          { type: 'button', role: 'tab', part: 'tab', 'data-action': 'tab', 'data-tag': t.tag ?? '', 'aria-selected': String(selected), 'aria-controls': 'tabpanel', tabindex: selected ? '0' : '-1', id: `tab-${t.tag ?? 'all'}` },
          t.label,
          unread ? h('span', { class: 'count', 'aria-hidden': 'true' }, String(unread)) : null,
          unread ? h('span', { class: 'sr' }, `, ${unread} unread`) : null,
        )
      }),
    )
    this.els.tablist.parentElement?.querySelector('#tabpanel')?.setAttribute('aria-labelledby', `tab-${this.tab ?? 'all'}`)
    if (focused) list.querySelector<HTMLElement>('[aria-selected="true"]')?.focus()
  }

  /** Redraws the list, keeping keyboard focus on the same control of the same message. */
  private render(): void {
    const active = this.root.activeElement as HTMLElement | null
    const keep = active?.closest<HTMLElement>('[data-id]') ? { id: active.closest<HTMLElement>('[data-id]')!.dataset.id, action: active.dataset.action } : null
    const now = Date.now()
    const locale = document.documentElement.lang || undefined
    this.els.list.replaceChildren(...this.items.map((m) => renderItem(m, now, locale)))
    this.els.empty.hidden = this.items.length > 0 || !this.loaded
    this.els.more.hidden = this.nextCursor === null
    if (keep) {
      const li = [...this.els.list.children].find((el) => (el as HTMLElement).dataset.id === keep.id)
      li?.querySelector<HTMLElement>(`[data-action="${keep.action}"]`)?.focus()
    }
  }
}
