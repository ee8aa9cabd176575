import { createRequire } from 'node:module'
import type { Liquid, Template } from 'liquidjs'
import type { TemplateRow } from '../store/directory.js'

/** A rendered notification for one channel and locale. */
export interface Rendered {
  title: string
  body: string
  format: 'text' | 'markdown' | 'html'
  /** The template version used, or null when the request's title/body were used as given. */
  templateId: number | null
  /** Why the template failed at render time (the first line of the error), when it fell back. */
  error?: string
  /** The fallback was caused by the render's time limit (not a template error or the memory limit). */
  timedOut?: boolean
}

/** What a template sees: `{{ title }}`, `{{ body }}`, `{{ payload.x }}`, `{{ recipient.name }}`, … */
export interface RenderContext {
  topic: string
  title: string | null
  body: string | null
  severity: string
  action_url: string | null
  payload: Record<string, unknown>
  recipient: { id: string; name: string | null; email: string | null; locale: string | null }
}

/**
 * The locales to try, most specific first, dropping one subtag at a time: `fr-CA` → `fr` → `en`,
 * `zh-Hant-TW` → `zh-Hant` → `zh` → `en`.
 */
export function localeChain(locale: string | null | undefined): string[] {
  const out: string[] = []
  const push = (l: string): void => {
    if (l && !out.includes(l)) out.push(l)
  }
  if (locale) {
    push(locale)
    const parts = locale.split(/[-_]/)
    for (let n = parts.length - 1; n >= 1; n--) push(parts.slice(0, n).join('-'))
  }
  push('en')
  return out
}

/** Locale tags compare without case, with `_` and `-` alike (pt_BR is pt-BR). */
const sameLocale = (a: string, b: string): boolean => a.replace(/_/g, '-').toLowerCase() === b.replace(/_/g, '-').toLowerCase()

/**
 * Picks the template for a locale among the active versions of one (topic, channel): the first
 * locale of the fallback chain that has one, and its highest active version.
 */
export function chooseTemplate(templates: readonly TemplateRow[], locale: string | null | undefined): TemplateRow | null {
  for (const l of localeChain(locale)) {
    let best: TemplateRow | null = null
    for (const t of templates) {
      if (t.active && sameLocale(t.locale, l) && (!best || t.version > best.version)) best = t
    }
    if (best) return best
  }
  return null
}

/** Render time of one template (subject and body together); past it the template falls back. */
export const RENDER_LIMIT_MS = 200

/** Renders a template for one recipient; `limitMs` (at most RENDER_LIMIT_MS) caps this render's time. */
export type Renderer = (template: TemplateRow | null, ctx: RenderContext, limitMs?: number) => Rendered

/** The request's title (defaulting to the topic) and body as given: no template, or its fallback. */
export function renderFallback(ctx: RenderContext, error?: string): Rendered {
  const r: Rendered = { title: ctx.title ?? ctx.topic, body: ctx.body ?? '', format: 'text', templateId: null }
  if (error !== undefined) r.error = error
  return r
}

const MAX_CACHED = 500
/**
 * Templates are stored in the database, never on disk: an empty in-memory file map makes
 * `{% include %}`, `{% render %}` and `{% layout %}` find nothing instead of reading server files.
 */
const NO_FILES = { templates: {}, relativeReference: false, strictVariables: false, strictFilters: false }
// liquidjs (~16 MB, ~0.3 s to load) is required on first use: an idle server, and one that sends
// no templated notification, never loads it (docs/performance.md).
let LiquidClass: typeof Liquid | null = null
const newLiquid = (opts: ConstructorParameters<typeof Liquid>[0]): Liquid =>
  new (LiquidClass ??= (createRequire(import.meta.url)('liquidjs') as typeof import('liquidjs')).Liquid)(opts)
let checkerEngine: Liquid | null = null
const checker = (): Liquid => (checkerEngine ??= newLiquid(NO_FILES))

/** The Liquid syntax error of a template text, or null when it parses. */
export function templateSyntaxError(text: string): string | null {
  try {
    checker().parse(text)
    return null
  } catch (err) {
    return (err as Error).message.split('\n')[0]!.slice(0, 300)
  }
}

/**
 * Renders with liquidjs, synchronously (the pipeline runs inside one SQLite transaction).
 * Parsed templates are cached by source text; html templates escape every output value.
 */
export function createRenderer(): Renderer {
  // Limits keep a runaway admin template (a huge range loop) from stalling the pipeline transaction.
  const limits = { ...NO_FILES, renderLimit: RENDER_LIMIT_MS, memoryLimit: 16e6 }
  let plainEngine: Liquid | null = null
  let htmlEngine: Liquid | null = null
  const plain = (): Liquid => (plainEngine ??= newLiquid(limits))
  const html = (): Liquid => (htmlEngine ??= newLiquid({ ...limits, outputEscape: 'escape' }))
  const cache = new Map<string, Template[]>()
  const parse = (engine: Liquid, key: string, text: string): Template[] => {
    let parsed = cache.get(key)
    if (!parsed) {
      parsed = engine.parse(text)
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!)
      cache.set(key, parsed)
    }
    return parsed
  }
  return (template, ctx, limitMs = RENDER_LIMIT_MS) => {
    if (!template) return renderFallback(ctx)
    const engine = template.format === 'html' ? html() : plain()
    const scope = { ...ctx, title: ctx.title ?? ctx.topic, body: ctx.body ?? '' }
    // Subject and body share one time limit: liquidjs's renderLimit counts per renderSync call.
    const deadline = performance.now() + Math.max(0, Math.min(RENDER_LIMIT_MS, limitMs))
    const run = (text: string, escaped: boolean): string => {
      if (text === '') return ''
      // The subject is never HTML, so it is rendered without escaping.
      const e = escaped ? engine : plain()
      const renderLimit = Math.max(0, deadline - performance.now())
      return e.renderSync(parse(e, `${escaped ? 'h' : 'p'}:${text}`, text), scope, { renderLimit }) as string
    }
    try {
      return {
        title: run(template.subject, false) || scope.title,
        body: run(template.body, true),
        format: template.format,
        templateId: template.id,
      }
    } catch (err) {
      // A template that fails at render time (checked for syntax at PUT) falls back to the raw text.
      const r = renderFallback(ctx, (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300))
      if (r.error!.startsWith('template render limit exceeded')) r.timedOut = true
      return r
    }
  }
}

const analysed = new Map<string, boolean>()
/** The same answers by row: a fan-out asks once per recipient with the same row, and hashing the text each time would cost more. */
const analysedRows = new WeakMap<TemplateRow, boolean>()

/**
 * True when a template's output may differ between recipients: liquidjs's static analysis finds
 * `recipient` among the context variables it reads, or a lookup whose root is computed
 * (`{{ [key].id }}`, which could name it). A template that cannot is rendered once per
 * notification, channel and locale; no template at all never depends on the recipient. When the
 * analysis fails the answer is true: rendering per recipient is always right, only slower.
 */
export function dependsOnRecipient(template: TemplateRow | null): boolean {
  if (template === null) return false
  let reads = analysedRows.get(template)
  if (reads !== undefined) return reads
  const key = `${template.subject}\u0000${template.body}`
  reads = analysed.get(key)
  if (reads === undefined) {
    reads = readsRecipient(template.subject) || readsRecipient(template.body)
    if (analysed.size >= MAX_CACHED) analysed.delete(analysed.keys().next().value!)
    analysed.set(key, reads)
  }
  analysedRows.set(template, reads)
  return reads
}

/** Above this many characters a template is not analysed (liquidjs's analysis grows with the square of the size) but rendered per recipient. */
const ANALYSIS_MAX_CHARS = 20_000

function readsRecipient(text: string): boolean {
  // Neither a name nor a bracket lookup can reach it: no parse needed.
  if (!text.includes('recipient') && !text.includes('[')) return false
  if (text.length > ANALYSIS_MAX_CHARS) return true
  try {
    const a = checker().analyzeSync(checker().parse(text), { partials: false })
    if (Object.hasOwn(a.globals, 'recipient')) return true
    // The analysis reports `[key].id` as the path `key.id`: its location, at the `[`, tells them
    // apart. A quoted or numeric root (`['recipient']`, `[0]`) is a plain name and was counted.
    const lines = text.split('\n')
    for (const v of Object.values(a.variables).flat()) {
      const at = lines[v.location.row - 1]?.slice(v.location.col - 1) ?? ''
      if (/^\[\s*[^\s'"\d-]/.test(at)) return true
    }
    return false
  } catch {
    return true
  }
}
