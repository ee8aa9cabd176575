import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRoute, z } from '@hono/zod-openapi'
import { AppError } from '../errors.js'
import { ErrorBody, jsonResponse, newRouter } from './common.js'
import { findPackageFile } from '../lib/package-file.js'
import { IMMUTABLE, loadStaticFile, sendStaticFile, type StaticFile } from './static-file.js'

/** The built element and its source map, read once. */
interface SdkBundle {
  script: StaticFile
  map: StaticFile | null
  /** The first 10 hex digits of the script's SHA-256: `/sdk/inbox.<hash>.js`. */
  hash: string
}

/** dist/sdk of this package: found from src/api under vitest and from dist/src/api when built. */
export function defaultSdkDir(): string {
  const pkg = findPackageFile('package.json')
  return pkg !== null ? join(dirname(pkg), 'dist', 'sdk') : join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sdk')
}

/** Reads dist/sdk/inbox.js (and its map); null when the element is not built. */
export function loadSdkBundle(dir: string): SdkBundle | null {
  const file = join(dir, 'inbox.js')
  if (!existsSync(file)) return null
  const script = loadStaticFile(file, 'text/javascript; charset=utf-8')
  const map = existsSync(`${file}.map`) ? loadStaticFile(`${file}.map`, 'application/json', { gzip: false }) : null
  return { script, map, hash: createHash('sha256').update(script.body).digest('hex').slice(0, 10) }
}

const asset = createRoute({
  method: 'get',
  path: '/sdk/{file}',
  operationId: 'inboxElementScript',
  security: [],
  tags: ['sdk'],
  summary: 'The <postbox-inbox> element: inbox.js (no-cache, ETag), inbox.<hash>.js (immutable) or inbox.js.map',
  request: {
    params: z.object({ file: z.string().max(100).regex(/^inbox(\.[0-9a-f]{10})?\.js(\.map)?$/).openapi({ param: { name: 'file', in: 'path' }, example: 'inbox.js' }) }),
  },
  responses: {
    200: { content: { 'text/javascript': { schema: z.string() } }, description: 'the ES module that defines <postbox-inbox>' },
    304: { description: 'not modified (If-None-Match)' },
    400: jsonResponse(ErrorBody, 'validation_failed: not an element file name'),
    404: jsonResponse(ErrorBody, 'not_found: not built, or an old hash'),
  },
})

/** A page on another origin loads the element as a module script, a CORS request: the file is public. */
const CROSS_ORIGIN = { 'access-control-allow-origin': '*', 'cross-origin-resource-policy': 'cross-origin' }

/**
 * GET /sdk/inbox.js and friends from the built element (`dir`, default dist/sdk): the stable
 * name is `no-cache` with an ETag (each load revalidates, cheaply), the hashed copy
 * `/sdk/inbox.<hash>.js` immutable; both gzip-encoded for a client that accepts it.
 */
export function sdkAssetRoutes(dir: string = defaultSdkDir()) {
  const r = newRouter()
  let bundle: SdkBundle | null | undefined
  r.openapi(asset, (c) => {
    bundle ??= loadSdkBundle(dir)
    if (!bundle) throw new AppError('not_found', 404, 'The inbox element is not built: run `npm run build` (or `npm ci`, which builds it)')
    const file = c.req.valid('param').file
    if (file.endsWith('.map')) {
      if (!bundle.map || file !== 'inbox.js.map') throw new AppError('not_found', 404, 'No such file')
      return sendStaticFile(c, bundle.map, { ...CROSS_ORIGIN, 'cache-control': 'no-cache' }) as never
    }
    const hashed = file !== 'inbox.js'
    if (hashed && file !== `inbox.${bundle.hash}.js`) throw new AppError('not_found', 404, 'No such version of the inbox element; load /sdk/inbox.js')
    const etag = `"${bundle.hash}"`
    if (!hashed && (c.req.header('if-none-match') ?? '').split(/\s*,\s*/).includes(etag)) {
      return c.body(null, 304, { etag, 'cache-control': 'no-cache', 'access-control-allow-origin': '*' }) as never
    }
    return sendStaticFile(c, bundle.script, { ...CROSS_ORIGIN, 'cache-control': hashed ? IMMUTABLE : 'no-cache', etag }) as never
  })
  return r
}
