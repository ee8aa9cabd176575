import { InboxApi, type InboxCounts, type InboxItem } from './api.js'
import { emit } from './dom.js'
import { buildPanel, closeSnoozeMenu, renderList, renderTabs, showUnread, toggleSnoozeMenu, type PanelElements } from './panel-view.js'
import { applyStateChange, mergePage, type BulkFilter, newestFirst, parseEventData, parseTabs, safeActionUrl, scriptOrigin, snoozeUntil, tabKeyTarget, type SnoozeChoice, type Tab } from './policy.js'
import { trackPlacement } from './placement.js'
import { openStream, type SseEvent } from './sse.js'

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
const SCRIPT_ORIGIN = scriptOrigin(import.meta.url)

/** How long to wait after a burst of stream events before asking for the tab counts again. */
const COUNTS_DEBOUNCE_MS = 200

/** The `<postbox-inbox>` custom element. */
export class PostboxInbox extends HTMLElement {
  /** Attributes whose change re-renders or reconnects. */
  static readonly observedAttributes = ['server', 'token', 'tabs', 'open']

  private readonly root: ShadowRoot
  private readonly els: PanelElements
  private api: InboxApi | null = null
  private closeStream: (() => void) | null = null
  private items: InboxItem[] = []
  private nextCursor: string | null = null
  private unread = 0
  private counts: InboxCounts | null = null
  private tabs: Tab[] = parseTabs(null)
  private tab: string | null = null
  private loaded = false
  private generation = 0
  private countsTimer: ReturnType<typeof setTimeout> | null = null
  private unplace: (() => void) | null = null
  private readonly onDocClick = (e: MouseEvent): void => {
    if (this.isOpen && !this.hasAttribute('inline') && !e.composedPath().includes(this)) this.setOpen(false, false)
  }

  constructor() {
    super()
    this.root = this.attachShadow({ mode: 'open' })
    this.els = buildPanel(this.root)
    const { bell } = this.els
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
    // A token set on the element before this module defined it sits on the instance: move it to the accessor.
    if (Object.prototype.hasOwnProperty.call(this, 'token')) {
      const value = (this as unknown as { token: string }).token
      delete (this as unknown as { token?: string }).token
      this.tokenValue = value
    }
    this.renderTabs()
    document.addEventListener('click', this.onDocClick)
    this.els.panel.hidden = !this.isOpen
    this.els.bell.setAttribute('aria-expanded', String(this.isOpen))
    this.place(this.isOpen)
    this.restart()
  }

  disconnectedCallback(): void {
    document.removeEventListener('click', this.onDocClick)
    this.place(false)
    this.stop()
  }

  attributeChangedCallback(name: string, old: string | null, value: string | null): void {
    if (old === value || !this.isConnected) return
    if (name === 'open') {
      this.els.panel.hidden = value === null
      this.els.bell.setAttribute('aria-expanded', String(value !== null))
      this.place(value !== null)
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
      { url: `${this.server}/v1/inbox/stream`, token },
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
          emit(this, 'postbox:error', { code: stop.code, status: stop.status })
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
      emit(this, 'postbox:ready', { unread: this.unread })
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
    const data = parseEventData(e.data)
    if (!data) return
    if (e.event === 'notification') {
      const item = data as unknown as InboxItem
      if (typeof item.id !== 'string') return
      const known = this.items.findIndex((m) => m.id === item.id)
      if (known >= 0) this.items[known] = item
      else if (!item.archived && this.inTab(item)) this.items = [item, ...this.items].sort(newestFirst)
      if (known < 0) emit(this, 'postbox:notification', { item })
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
    showUnread(this.els, n)
    emit(this, 'postbox:unread', { unread: n })
  }

  private setStatus(text: string): void {
    this.els.status.textContent = text
  }

  private fail(err: unknown): void {
    const e = err as { code?: string; status?: number }
    emit(this, 'postbox:error', { code: e.code ?? 'network_error', status: e.status ?? 0 })
    if (e.status === 401) this.setStatus('Signed out of notifications')
  }

  private setOpen(open: boolean, focus: boolean): void {
    this.toggleAttribute('open', open)
    if (open && focus) (this.els.list.querySelector<HTMLElement>('button.open') ?? this.els.tablist.querySelector<HTMLElement>('[aria-selected="true"]'))?.focus()
    if (!open && focus) this.els.bell.focus()
  }

  /** Keeps the open panel inside the viewport wherever the element sits (placement.ts); closed, it stops. */
  private place(open: boolean): void {
    this.unplace?.()
    this.unplace = open ? trackPlacement(this, this.els.panel) : null
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
    else if (action === 'snooze-menu') toggleSnoozeMenu(this.root, button, item.id)
    else if (action.startsWith('snooze:')) void this.snooze(item, action.slice(7) as SnoozeChoice)
  }

  /** The main click: records it, then follows `action_url` (or only marks read when there is none). */
  private open(item: InboxItem): void {
    const url = safeActionUrl(item.action_url, document.baseURI)
    this.optimistic(item, { read: true, seen: true })
    void this.api!.clicked([item.id]).catch((err: unknown) => this.fail(err))
    if (!url) return
    if (!emit(this, 'postbox:action', { item, url }, true)) return
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
      if (!closeSnoozeMenu(target) && this.isOpen) this.setOpen(false, true)
      e.preventDefault()
      return
    }
    if (target.getAttribute('role') === 'tab') {
      const tabs = [...this.els.tablist.querySelectorAll<HTMLElement>('[role="tab"]')]
      const i = tabs.indexOf(target)
      const j = tabKeyTarget(e.key, i, tabs.length)
      if (j !== null) {
        e.preventDefault()
        this.selectTab(tabs[j]!.dataset.tag || null, true)
      }
    }
  }

  private renderTabs(): void {
    renderTabs(this.els, this.root, this.tabs, this.tab, this.counts, this.unread)
  }

  private render(): void {
    renderList(this.els, this.root, this.items, this.loaded, this.nextCursor)
  }
}
