import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { AppError } from '../errors.js'
import { ErrorBody, jsonResponse, newRouter } from './common.js'
import type { ApiEnv } from './deps.js'

/** A hashed copy never changes, so browsers keep it a year without asking. */
const IMMUTABLE = 'public, max-age=31536000, immutable'

/** The built element and its source map, read once. */
interface SdkBundle {
  script: Uint8Array
  gzip: Uint8Array
  map: Uint8Array | null
  /** The first 10 hex digits of the script's SHA-256: `/sdk/inbox.<hash>.js`. */
  hash: string
}

/** dist/sdk of this package: found from src/api under vitest and from dist/src/api when built. */
export function defaultSdkDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'sdk')
    dir = dirname(dir)
  }
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sdk')
}

/** Reads dist/sdk/inbox.js (and its map); null when the element is not built. */
export function loadSdkBundle(dir: string): SdkBundle | null {
  const file = join(dir, 'inbox.js')
  if (!existsSync(file)) return null
  const script = readFileSync(file)
  const map = existsSync(`${file}.map`) ? readFileSync(`${file}.map`) : null
  return { script, gzip: gzipSync(script, { level: 9 }), map, hash: createHash('sha256').update(script).digest('hex').slice(0, 10) }
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

function send(c: Context<ApiEnv>, body: Uint8Array, headers: Record<string, string>): Response {
  return c.body(body as Uint8Array<ArrayBuffer>, 200, {
    'x-content-type-options': 'nosniff',
    // A page on another origin loads it as a module script, which is a CORS request; the file is public.
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
    'content-length': String(body.length),
    ...headers,
  })
}

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
      return send(c, bundle.map, { 'content-type': 'application/json', 'cache-control': 'no-cache' }) as never
    }
    const hashed = file !== 'inbox.js'
    if (hashed && file !== `inbox.${bundle.hash}.js`) throw new AppError('not_found', 404, 'No such version of the inbox element; load /sdk/inbox.js')
    const etag = `"${bundle.hash}"`
    if (!hashed && (c.req.header('if-none-match') ?? '').split(/\s*,\s*/).includes(etag)) {
      return c.body(null, 304, { etag, 'cache-control': 'no-cache', 'access-control-allow-origin': '*' }) as never
    }
    const gz = /\bgzip\b/.test(c.req.header('accept-encoding') ?? '')
    return send(c, gz ? bundle.gzip : bundle.script, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': hashed ? IMMUTABLE : 'no-cache',
      etag,
      vary: 'accept-encoding',
      ...(gz ? { 'content-encoding': 'gzip' } : {}),
    }) as never
  })
  return r
}
