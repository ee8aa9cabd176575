import { createRoute, z } from '@hono/zod-openapi'
import { gzipSync } from 'node:zlib'
import { API_DOCS_CSS, renderApiDocs } from './api-docs-render.js'
import { newRouter } from './common.js'
import { faviconIco } from './favicon.js'
import { sendStaticFile as send, type StaticFile } from './static-file.js'
import { pagePolicy } from './web.js'

/** A page generated in memory, gzipped once (level 9) like the built files. */
const inMemory = (body: Buffer, type: string): StaticFile => ({ body, gzip: gzipSync(body, { level: 9 }), type })

/** A day: the icon and the style sheet change only with a new version, and their URLs carry none. */
const DAY = 'public, max-age=86400'

// Browser conveniences, not part of the API: left out of /openapi.json like `/`.
const hidden = { tags: ['web'], hide: true as const, security: [] }
const docsPage = createRoute({
  ...hidden, method: 'get', path: '/docs', operationId: 'apiDocsPage', summary: 'The API reference, rendered from /openapi.json',
  responses: { 200: { content: { 'text/html': { schema: z.string() } }, description: 'the page' } },
})
const docsStyle = createRoute({
  ...hidden, method: 'get', path: '/docs/style.css', operationId: 'apiDocsStyle', summary: 'The API reference style sheet',
  responses: { 200: { content: { 'text/css': { schema: z.string() } }, description: 'the style sheet' } },
})
const favicon = createRoute({
  ...hidden, method: 'get', path: '/favicon.ico', operationId: 'favicon', summary: 'The icon browsers show for Postbox pages',
  responses: { 200: { content: { 'image/x-icon': { schema: z.string() } }, description: 'the icon' } },
})

/**
 * GET /docs (a readable API reference generated from `document()`, the same object /openapi.json
 * serves, once, on first request: no script, nothing from the network, the console's policy),
 * /docs/style.css and /favicon.ico.
 */
export function apiDocsRoutes(document: () => unknown) {
  const r = newRouter()
  let page: StaticFile | null = null
  const style = inMemory(Buffer.from(API_DOCS_CSS), 'text/css; charset=utf-8')
  const icon: StaticFile = { body: faviconIco(), gzip: null, type: 'image/x-icon' }
  r.openapi(docsPage, (c) => {
    page ??= inMemory(Buffer.from(renderApiDocs(document(), '/docs/style.css')), 'text/html; charset=utf-8')
    return send(c, page, { 'cache-control': 'no-cache', 'content-security-policy': pagePolicy('console', []), 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' }) as never
  })
  r.openapi(docsStyle, (c) => send(c, style, { 'cache-control': DAY }) as never)
  r.openapi(favicon, (c) => send(c, icon, { 'cache-control': DAY }) as never)
  return r
}
