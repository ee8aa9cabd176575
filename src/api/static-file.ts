import { readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import type { Context } from 'hono'
import type { ApiEnv } from './deps.js'

/** Hashed file names never change content, so browsers keep them a year without asking. */
export const IMMUTABLE = 'public, max-age=31536000, immutable'
/** Below this size gzip costs more than it saves. */
const GZIP_MIN_BYTES = 1024

/** A built file read once, with its gzip encoding when that is worth sending. */
export interface StaticFile {
  body: Uint8Array
  gzip: Uint8Array | null
  type: string
}

/** Reads `path` as a file of content type `type`, gzipped ahead (level 9) when at least 1 KB and smaller so. */
export function loadStaticFile(path: string, type: string, opts: { gzip?: boolean } = {}): StaticFile {
  const body = readFileSync(path)
  const gz = opts.gzip !== false && body.length >= GZIP_MIN_BYTES ? gzipSync(body, { level: 9 }) : null
  return { body, gzip: gz && gz.length < body.length ? gz : null, type }
}

/** Answers 200 with `file`, gzip-encoded for a client that accepts it, plus `headers`. */
export function sendStaticFile(c: Context<ApiEnv>, file: StaticFile, headers: Record<string, string>): Response {
  const gz = file.gzip !== null && /\bgzip\b/.test(c.req.header('accept-encoding') ?? '')
  const h: Record<string, string> = { 'content-type': file.type, 'x-content-type-options': 'nosniff', vary: 'accept-encoding', ...headers }
  if (gz) h['content-encoding'] = 'gzip'
  const body = gz ? file.gzip! : file.body
  h['content-length'] = String(body.length)
  return c.body(body as Uint8Array<ArrayBuffer>, 200, h)
}
