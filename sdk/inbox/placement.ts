/**
 * Where the open panel goes: under the bell, its right edge on the bell's, unless that leaves
 * the viewport. Then it shifts left or right to stay at least MARGIN px inside it, narrows to
 * the viewport on a small screen, and opens above the bell when there is more room there.
 */

/** The smallest gap between the panel and the viewport's edges, in CSS pixels. */
export const MARGIN = 8
/** The gap between the bell and the panel (as in the stylesheet). */
const GAP = 6

/** The layout viewport's size (without scrollbars). */
function viewport(): { width: number; height: number } {
  const root = document.documentElement
  return { width: root.clientWidth || innerWidth, height: root.clientHeight || innerHeight }
}

/** Clears what `placePanel` set, back to the stylesheet's place (under the bell, right-aligned). */
function reset(panel: HTMLElement): void {
  for (const p of ['left', 'right', 'top', 'bottom', 'max-width', 'max-height']) panel.style.removeProperty(p)
}

/** Places the open panel of `host` inside the viewport (nothing for an inline or hidden panel). */
export function placePanel(host: HTMLElement, panel: HTMLElement): void {
  reset(panel)
  if (host.hasAttribute('inline') || panel.hidden) return
  const view = viewport()
  panel.style.maxWidth = `${Math.max(0, view.width - 2 * MARGIN)}px`
  const bell = host.getBoundingClientRect()
  const width = panel.getBoundingClientRect().width
  // Right-aligned with the bell, then pulled back inside the viewport (the left edge wins on a tiny one).
  const left = Math.max(MARGIN, Math.min(bell.right - width, view.width - MARGIN - width))
  panel.style.left = `${left - bell.left}px`
  panel.style.right = 'auto'
  // Below by default; above when the room below is short of the panel's full height and there is more above.
  const full = parseFloat(getComputedStyle(panel).maxHeight) || panel.getBoundingClientRect().height
  const below = view.height - bell.bottom - GAP - MARGIN
  const above = bell.top - GAP - MARGIN
  const up = below < full && above > below
  if (up) {
    panel.style.top = 'auto'
    panel.style.bottom = `calc(100% + ${GAP}px)`
  }
  const room = Math.max(0, Math.floor(up ? above : below))
  if (room < full) panel.style.maxHeight = `${room}px`
}

/**
 * Places the panel now and again whenever the viewport is resized or anything scrolls, until the
 * returned function is called (when the panel closes or the element leaves the page).
 */
export function trackPlacement(host: HTMLElement, panel: HTMLElement): () => void {
  const place = (): void => placePanel(host, panel)
  place()
  addEventListener('resize', place, { passive: true })
  addEventListener('scroll', place, { passive: true, capture: true })
  return () => {
    removeEventListener('resize', place)
    removeEventListener('scroll', place, { capture: true })
    reset(panel)
  }
}
