import type { TemplateRow } from '../store/directory.js'
import type { Log } from '../log.js'
import { RENDER_LIMIT_MS, renderFallback, type RenderContext, type Rendered, type Renderer } from './render.js'

/** The render budget of a notification with few recipients. */
export const RENDER_BUDGET_MS = 1000
/** What each recipient adds to the budget (a 30-item markdown loop naming `recipient` measured 0.25 ms per render). */
export const RENDER_MS_PER_RECIPIENT = 1
/**
 * The budget's ceiling, whatever the audience. The accept transaction holds the process and the
 * file's write lock meanwhile; with the rest of a 10,000-recipient fan-out (~0.3 s of inserts)
 * it stays under SQLite's busy timeout (5 s), so another process on the file (the CLI, a
 * standby server) waits for the lock instead of failing. Much larger audiences can pass it.
 */
export const RENDER_BUDGET_CAP_MS = 4_000
/** The share of the budget spent before the average so far is trusted to predict the whole fan-out. */
const PROBE_SHARE = 0.1

/** The render budget of one notification to `audience` recipients, in ms. */
export function renderBudgetMs(audience: number): number {
  return Math.min(RENDER_BUDGET_CAP_MS, Math.max(RENDER_BUDGET_MS, audience * RENDER_MS_PER_RECIPIENT))
}

/**
 * The time limit of the next render, or 0 when it must not start: `spentMs` reached the budget,
 * or (once a tenth of it is spent, so one slow first render or GC pause does not decide) the
 * average per finished recipient says the whole fan-out would overrun it. A template at the
 * 200 ms limit stops after one render; one at 0.25 ms renders for 10,000 recipients (2.5 s of 4 s).
 */
export function renderLimitFor(budgetMs: number, spentMs: number, finished: number, audience: number): number {
  const left = budgetMs - spentMs
  if (left <= 0) return 0
  if (finished > 0 && spentMs >= budgetMs * PROBE_SHARE && (spentMs / finished) * audience > budgetMs) return 0
  return Math.min(RENDER_LIMIT_MS, left)
}

/** What a notification's renders need: the renderer, a monotonic ms timer, and its log. */
export interface BudgetedRenderDeps {
  render: Renderer
  timer: () => number
  log: Log
  topic: string
  /** How many recipients the notification fans out to. */
  audience: number
}

/**
 * Renders one notification's templates within its budget (renderBudgetMs). A template that fails
 * gets no second chance in this notification (every later recipient gets the fallback at once);
 * a render that ran out of time only because the budget left it less than RENDER_LIMIT_MS is
 * the budget's end, not the template's failure. Each is logged once, never with the payload.
 * `recipient` is the 1-based position of the recipient being rendered in the fan-out.
 */
export function createBudgetedRender(deps: BudgetedRenderDeps): (template: TemplateRow | null, ctx: RenderContext, recipient: number) => Rendered {
  const { render, timer, log, topic, audience } = deps
  const budgetMs = renderBudgetMs(audience)
  const failed = new Map<number, string>()
  let spentMs = 0
  let spent = false
  const fields = (t: TemplateRow) => ({ topic, channel: t.channel, locale: t.locale, template_version: t.version })
  const budgetEnds = (template: TemplateRow, ctx: RenderContext): Rendered => {
    if (!spent) {
      spent = true
      log.warn(
        { ...fields(template), budget_ms: budgetMs, spent_ms: Math.round(spentMs), recipients: audience },
        'notification render budget spent; sent the title and body as given to the remaining recipients',
      )
    }
    return renderFallback(ctx, 'render_budget_exhausted')
  }
  return (template, ctx, recipient) => {
    if (template === null) return renderFallback(ctx)
    const error = failed.get(template.id)
    if (error !== undefined) return renderFallback(ctx, error)
    const limit = spent ? 0 : renderLimitFor(budgetMs, spentMs, recipient - 1, audience)
    if (limit <= 0) return budgetEnds(template, ctx)
    const started = timer()
    const rendered = render(template, ctx, limit)
    spentMs += timer() - started
    if (rendered.error === undefined) return rendered
    if (rendered.timedOut && limit < RENDER_LIMIT_MS) return budgetEnds(template, ctx)
    failed.set(template.id, rendered.error)
    log.warn({ ...fields(template), error: rendered.error }, 'notification template failed to render; sent the title and body as given')
    return rendered
  }
}
