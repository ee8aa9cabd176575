import { createRoute, z } from '@hono/zod-openapi'
import { jsonObject } from '../lib/json-object.js'
import { createRenderer } from '../notify/render.js'
import { previewTemplate } from '../notify/preview.js'
import { TemplateIn, UserId } from '../notify/schemas.js'
import { requireRole } from './auth.js'
import { bearerSecurity, ErrorBody, errorResponses, jsonBody, jsonResponse, newRouter } from './common.js'

const PreviewIn = z
  .object({
    topic: TemplateIn.shape.topic,
    channel: TemplateIn.shape.channel,
    locale: TemplateIn.shape.locale,
    data: jsonObject('must be an object').optional().openapi({ description: "The notification's payload, `{{ payload.… }}`", example: { amount: '12.00' } }),
    user_id: UserId.optional().openapi({ description: 'A user whose name, email and locale fill `{{ recipient.… }}`' }),
    title: z.string().max(1000).optional(),
    body: z.string().max(100_000).optional(),
    template: z
      .object({ subject: TemplateIn.shape.subject, body: TemplateIn.shape.body, format: TemplateIn.shape.format })
      .optional()
      .openapi({ description: 'An unsaved draft to render instead of the active template' }),
  })
  .openapi('TemplatePreviewIn')

const PreviewOut = z
  .object({
    template: z.object({ id: z.number().int(), version: z.number().int(), locale: z.string() }).nullable(),
    title: z.string(),
    body: z.string(),
    format: z.enum(['text', 'markdown', 'html']),
    html: z.string(),
    text: z.string(),
    error: z.string().nullable(),
  })
  .openapi('TemplatePreview')

const preview = createRoute({
  method: 'post',
  path: '/v1/templates/preview',
  operationId: 'previewTemplate',
  tags: ['directory'],
  summary: 'Render a template for a recipient without sending anything (viewer)',
  security: bearerSecurity,
  middleware: [requireRole('viewer')] as const,
  request: { body: jsonBody(PreviewIn) },
  responses: { 200: jsonResponse(PreviewOut, 'the rendering'), 422: jsonResponse(ErrorBody, 'markdown_too_deep: the rendered markdown body nests too deep to render'), ...errorResponses },
})

/** POST /v1/templates/preview: the console's live template preview. */
export function templatePreviewRoutes() {
  const r = newRouter()
  // Its own renderer: the pipeline's parse cache is not shared with drafts typed key by key.
  const render = createRenderer()
  r.openapi(preview, async (c) => {
    const { store, clock } = c.var.deps
    return c.json(await previewTemplate(store, render, c.req.valid('json'), clock.now()), 200)
  })
  return r
}
