import { errors } from '../errors.js'
import type { Store } from '../store/index.js'
import type { TemplateRow } from '../store/directory.js'
import { loadMarkdown } from './markdown-lazy.js'
import { htmlToText } from './html-text.js'
import { markdownTooDeep } from './markdown-depth.js'
import { chooseTemplate, templateSyntaxError, type RenderContext, type Renderer } from './render.js'

/** What `POST /v1/templates/preview` renders: a stored template, or a draft in its place. */
export interface PreviewInput {
  topic: string
  channel: 'inbox' | 'email' | 'webhook'
  locale?: string
  /** The notification's payload (`{{ payload.x }}`). */
  data?: Record<string, unknown>
  /** A user whose name, email and locale fill `{{ recipient.… }}`; 404 when unknown. */
  user_id?: string
  title?: string
  body?: string
  /** An unsaved draft rendered instead of the active template (the console's live preview). */
  template?: { subject?: string; body?: string; format?: 'text' | 'markdown' | 'html' }
}

/** The rendering, as a recipient would get it, with nothing written or sent. */
export interface PreviewOutput {
  /** The stored template version used; null for a draft or when none is active (the fallback). */
  template: { id: number; version: number; locale: string } | null
  title: string
  body: string
  format: 'text' | 'markdown' | 'html'
  /** The body as HTML (markdown rendered, html as is, text escaped) and as plain text. */
  html: string
  text: string
  /** Why rendering fell back to the raw title and body, when it did. */
  error: string | null
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

/**
 * Renders a template exactly as the pipeline would for one recipient (the same template choice
 * by locale fallback and the same renderer), without a notification, a delivery or a send.
 * A draft with a Liquid syntax error, or markdown nested too deep, is 400 `validation_failed`, as
 * its PUT would be; a rendered markdown body nested too deep (the data made it so) is 422
 * `markdown_too_deep` (markdownToHtml).
 */
export async function previewTemplate(store: Store, render: Renderer, input: PreviewInput, now: number): Promise<PreviewOutput> {
  const user = input.user_id === undefined ? null : await store.directory.getUser(input.user_id)
  if (input.user_id !== undefined && user === null) throw errors.notFound('User')
  const locale = input.locale ?? user?.locale ?? null
  let template: TemplateRow | null
  if (input.template) {
    const draft = input.template
    const issues = (['subject', 'body'] as const).flatMap((field) => {
      const error = templateSyntaxError(draft[field] ?? '')
      return error === null ? [] : [{ field: `template.${field}`, message: `invalid Liquid template: ${error}`, in: 'body' }]
    })
    const tooDeep = draft.format === 'markdown' ? markdownTooDeep(draft.body ?? '') : null
    if (tooDeep !== null) issues.push({ field: 'template.body', message: tooDeep, in: 'body' })
    if (issues.length > 0) throw errors.validation(issues)
    template = {
      id: 0,
      topic: input.topic,
      channel: input.channel,
      locale: locale ?? 'en',
      version: 0,
      subject: draft.subject ?? '',
      body: draft.body ?? '',
      format: draft.format ?? 'text',
      active: true,
      createdAt: now,
    }
  } else template = chooseTemplate(await store.directory.activeTemplates(input.topic, input.channel), locale)
  const ctx: RenderContext = {
    topic: input.topic,
    title: input.title ?? null,
    body: input.body ?? null,
    severity: 'info',
    action_url: null,
    payload: input.data ?? {},
    recipient: { id: user?.id ?? input.user_id ?? 'preview', name: user?.name ?? null, email: user?.email ?? null, locale },
  }
  const out = render(template, ctx)
  const html = out.format === 'markdown' ? (await loadMarkdown())(out.body) : out.format === 'html' ? out.body : escapeHtml(out.body)
  return {
    template: input.template || template === null || out.templateId === null ? null : { id: template.id, version: template.version, locale: template.locale },
    title: out.title,
    body: out.body,
    format: out.format,
    html,
    text: out.format === 'text' ? out.body : htmlToText(html),
    error: out.error ?? null,
  }
}
