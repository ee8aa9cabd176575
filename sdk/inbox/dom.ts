/** Tiny DOM helpers for the element: no framework, no innerHTML for data (text only). */

/** Creates an element with attributes (`false`/null skip) and children (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | null | undefined> = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue
    el.setAttribute(k, v === true ? '' : v)
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c)
  return el
}

const SVG = 'http://www.w3.org/2000/svg'

/** An inline 24×24 stroke icon from path data (decorative: hidden from assistive technology). */
export function icon(paths: string): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', '0 0 24 24')
  svg.setAttribute('fill', 'none')
  svg.setAttribute('stroke', 'currentColor')
  svg.setAttribute('stroke-width', '2')
  svg.setAttribute('stroke-linecap', 'round')
  svg.setAttribute('stroke-linejoin', 'round')
  svg.setAttribute('aria-hidden', 'true')
  svg.setAttribute('focusable', 'false')
  for (const d of paths.split('|')) {
    const p = document.createElementNS(SVG, 'path')
    p.setAttribute('d', d)
    svg.append(p)
  }
  return svg
}

/** Icon path data. */
export const ICONS = {
  bell: 'M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9|M10.3 21a1.94 1.94 0 0 0 3.4 0',
  check: 'M20 6 9 17l-5-5',
  dot: 'M12 16a4 4 0 1 0 0-8 4 4 0 0 0 0 8z',
  clock: 'M12 22a10 10 0 1 0 0-20 10 10 0 0 0 0 20z|M12 6v6l4 2',
  archive: 'M21 8v13H3V8|M1 3h22v5H1z|M10 12h4',
}

/** "5 min ago", "yesterday", "3 days ago" in the page's language. */
export function relativeTime(iso: string, now: number, locale: string | undefined): string {
  const t = Date.parse(iso)
  if (!Number.isFinite(t)) return ''
  const s = Math.round((t - now) / 1000)
  const fmt = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' })
  const abs = Math.abs(s)
  if (abs < 45) return fmt.format(0, 'second')
  if (abs < 3600) return fmt.format(Math.round(s / 60), 'minute')
  if (abs < 86_400) return fmt.format(Math.round(s / 3600), 'hour')
  if (abs < 30 * 86_400) return fmt.format(Math.round(s / 86_400), 'day')
  return new Date(t).toLocaleDateString(locale)
}

/** Dispatches a bubbling, composed CustomEvent from `el`; false when a listener cancelled it. */
export function emit(el: HTMLElement, type: string, detail: unknown, cancelable = false): boolean {
  return el.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true, cancelable }))
}
