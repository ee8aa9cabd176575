import { existsSync, readdirSync } from 'node:fs'
import { dirname, extname, join } from 'node:path'
import { createRoute, z } from '@hono/zod-openapi'
import { AppError } from '../errors.js'
import { findPackageFile } from '../lib/package-file.js'
import { ErrorBody, jsonResponse, newRouter } from './common.js'
import { IMMUTABLE, loadStaticFile, sendStaticFile as send, type StaticFile } from './static-file.js'

/** The pages Postbox serves from dist/web (built by `npm run build:web`). */
export const PAGES = ['console', 'portal'] as const
type Page = (typeof PAGES)[number]

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
}
/** The built files, read once: a page is a few KB and the console's assets under 1 MB. */
interface WebBundle {
  pages: Partial<Record<Page, StaticFile>>
  assets: Map<string, StaticFile>
}

const load = (path: string): StaticFile => loadStaticFile(path, TYPES[extname(path)] ?? 'application/octet-stream')

/** dist/web of this package (found from src/ under vitest and from dist/src when built), or null. */
export function defaultWebDir(): string | null {
  const page = findPackageFile(join('dist', 'web', 'console.html'))
  return page === null ? null : dirname(page)
}

/** Reads a built web directory; pages or assets that are missing are simply absent. */
export function loadWebBundle(dir: string | null): WebBundle {
  const bundle: WebBundle = { pages: {}, assets: new Map() }
  if (dir === null) return bundle
  for (const page of PAGES) {
    const file = join(dir, `${page}.html`)
    if (existsSync(file)) bundle.pages[page] = load(file)
  }
  const assets = join(dir, 'assets')
  if (existsSync(assets)) for (const name of readdirSync(assets)) bundle.assets.set(name, load(join(assets, name)))
  return bundle
}

/** A normalised origin list as CSP `frame-ancestors` sources (`*` stays `*`). */
function frameAncestors(origins: readonly string[]): string {
  return ["'self'", ...origins].join(' ')
}

/**
 * The pages' Content-Security-Policy: only this origin's files, no inline script or style, no
 * plugin, no <base>. The console may not be framed at all; the portal by POSTBOX_PORTAL_ORIGINS.
 */
export function pagePolicy(page: Page, portalOrigins: readonly string[]): string {
  const ancestors = page === 'portal' ? frameAncestors(portalOrigins) : "'none'"
  return `default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors ${ancestors}`
}

const notBuilt = (): AppError => new AppError('not_found', 404, 'The web pages are not built: run `npm run build` (or `npm ci`, which builds them)')

const html = { content: { 'text/html': { schema: z.string() } }, description: 'the page' }
const pageRoute = (page: Page) =>
  createRoute({
    method: 'get',
    path: `/${page}`,
    operationId: page === 'console' ? 'consolePage' : 'portalPage',
    security: [],
    tags: ['web'],
    summary: page === 'console' ? "The operator's console (sign in with an API key)" : 'The customer portal, opened by a portal link (`/portal#token=ptk_…`)',
    responses: { 200: html, 404: jsonResponse(ErrorBody, 'not built') },
  })

const asset = createRoute({
  method: 'get',
  path: '/assets/{file}',
  operationId: 'webAsset',
  security: [],
  tags: ['web'],
  summary: 'A hashed script or style sheet of the pages (cached for a year)',
  request: { params: z.object({ file: z.string().max(200).regex(/^[A-Za-z0-9_.-]+$/).openapi({ param: { name: 'file', in: 'path' } }) }) },
  responses: { 200: { content: { 'text/javascript': { schema: z.string() } }, description: 'the file' }, 404: jsonResponse(ErrorBody, 'not_found') },
})

const root = createRoute({
  method: 'get',
  path: '/',
  operationId: 'rootRedirect',
  tags: ['web'],
  summary: 'Redirects to the console',
  // A browser's convenience, not part of the API: left out of /openapi.json (a redirect-only operation lints as incomplete).
  hide: true,
  security: [],
  responses: { 302: { description: 'to /console' } },
})

/**
 * GET /console, /portal and /assets/:file from the built web directory (`dir`, default
 * dist/web), and / redirecting to /console. Pages are `no-cache` (each load asks for the newest
 * build), assets immutable. Nothing here reads a key: the pages sign in with the API themselves.
 */
export function webRoutes(dir: string | null = defaultWebDir()) {
  const r = newRouter()
  let bundle: WebBundle | null = null
  const files = (): WebBundle => (bundle ??= loadWebBundle(dir))
  for (const page of PAGES) {
    r.openapi(pageRoute(page), (c) => {
      const file = files().pages[page]
      if (!file) throw notBuilt()
      return send(c, file, {
        'cache-control': 'no-cache',
        'content-security-policy': pagePolicy(page, c.var.deps.config.portalOrigins ?? []),
        'referrer-policy': 'no-referrer',
        ...(page === 'console' ? { 'x-frame-options': 'DENY' } : {}),
      }) as never
    })
  }
  r.openapi(asset, (c) => {
    const file = files().assets.get(c.req.valid('param').file)
    if (!file) throw new AppError('not_found', 404, 'Asset not found')
    return send(c, file, { 'cache-control': IMMUTABLE }) as never
  })
  r.openapi(root, (c) => c.redirect('/console', 302) as never)
  return r
}
