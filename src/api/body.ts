import type { MiddlewareHandler } from 'hono'
import { AppError, errors } from '../errors.js'
import type { ApiEnv } from './deps.js'

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** Deeper JSON is refused: it parses, but re-serialising it would overflow the stack. */
export const MAX_JSON_DEPTH = 64

/** True when a Content-Encoding header names a coding other than `identity` (gzip, br, deflate…). */
export function isEncodedBody(header: string | undefined): boolean {
  if (!header) return false
  return header.split(',').some((coding) => {
    const name = coding.trim().toLowerCase()
    return name !== '' && name !== 'identity'
  })
}

/**
 * True when a Content-Type header names JSON (`application/json`, `application/*+json`): the
 * media type before any `;` parameters, case-insensitive, with optional whitespace around it
 * (RFC 9110 §8.3.1), so `Application/JSON ; charset=utf-8` is JSON.
 */
export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false
  return JSON_TYPE.test(header.split(';')[0]!.trim())
}

/**
 * The Content-Type the route validators see once the guard has accepted a JSON body. Why: the
 * zod-openapi media-type gate matches the raw header with a stricter pattern than RFC 9110
 * (no space before `;`, no digits or `_` in a `+json` subtype) and answered 415 to valid JSON.
 */
const CANONICAL_JSON = 'application/json'

/**
 * Reads the request body before any route sees it: 413 `payload_too_large` over `limit` bytes
 * (from Content-Length at once, or while streaming when it is absent or chunked), 415
 * `unsupported_media_type` for a non-empty body that is not JSON or is compressed (any
 * Content-Encoding but identity), 400 `invalid_json` for bytes that are not UTF-8 JSON. The
 * text is then cached on the request, so the route validators parse from memory and never
 * touch the stream again.
 */
export function jsonBodyGuard(limit: number): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (!BODY_METHODS.has(c.req.method)) return next()
    const declared = c.req.header('content-length')
    if (declared !== undefined && /^\d+$/.test(declared.trim()) && Number(declared) > limit) throw errors.payloadTooLarge(limit)
    const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming
    const bytes = isNodeStream(incoming) ? await readNodeLimited(incoming, limit) : await readLimited(c.req.raw, limit)
    // Hono keeps body promises in bodyCache at runtime; its type declares the resolved values.
    const cache = c.req.bodyCache as Record<string, unknown>
    const contentType = c.req.header('content-type')
    const json = isJsonContentType(contentType)
    if (json && contentType !== CANONICAL_JSON) canonicalContentType(c.req)
    if (bytes.byteLength === 0) {
      // An empty body with a JSON type means "no fields", so optional-body routes just work.
      if (json) cache.text = Promise.resolve('{}')
      else cache.text = Promise.resolve('')
      return next()
    }
    if (isEncodedBody(c.req.header('content-encoding'))) {
      throw new AppError('unsupported_media_type', 415, 'Content encodings are not supported; send the JSON body uncompressed (no Content-Encoding)')
    }
    if (!json) throw errors.unsupportedMediaType()
    let text: string
    let parsed: unknown
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
      parsed = JSON.parse(text)
    } catch {
      throw errors.invalidJson()
    }
    // Fatal UTF-8 decoding rules out raw lone surrogates, but a `\ud800` escape still parses
    // to one. SQLite would store it as U+FFFD, so the value read back would differ from the
    // value written: refuse it here, once, for every route.
    if (text.includes('\\u') && hasLoneSurrogate(parsed)) {
      throw errors.invalidJson('Request body contains an unpaired UTF-16 surrogate escape')
    }
    // A number too large for a double parses to Infinity and would be stored as null: refuse
    // it rather than keep a different value than the one sent. Only an exponent or a very long
    // digit run can overflow, so most bodies skip the walk.
    if (/[eE][+]?\d{3}|\d{300}/.test(text) && hasNonFiniteNumber(parsed)) {
      throw errors.validation([{ field: '(root)', message: 'a number is too large to represent (beyond ±1.8e308)', in: 'body' }])
    }
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      throw errors.validation([{ field: '(root)', message: `JSON is nested deeper than ${MAX_JSON_DEPTH} levels`, in: 'body' }])
    }
    cache.text = Promise.resolve(text)
    // The validators call c.req.json(); hand them the value parsed above instead of parsing twice.
    c.req.json = <T>() => Promise.resolve(parsed as T)
    return next()
  }
}

/** Makes `req.header('content-type')` answer CANONICAL_JSON (the body is already known to be JSON). */
function canonicalContentType(req: { header: (name?: string) => unknown }): void {
  const original = req.header.bind(req)
  req.header = ((name?: string) => (name !== undefined && name.toLowerCase() === 'content-type' ? CANONICAL_JSON : original(name))) as typeof req.header
}

/** True when any number in a parsed JSON value is not finite. */
export function hasNonFiniteNumber(value: unknown, depth = 0): boolean {
  if (typeof value === 'number') return !Number.isFinite(value)
  if (typeof value !== 'object' || value === null || depth > MAX_JSON_DEPTH) return false
  return (Array.isArray(value) ? value : Object.values(value)).some((v) => hasNonFiniteNumber(v, depth + 1))
}

const LONE_SURROGATE = /\p{Cs}/u

/** True when any string or key in a parsed JSON value holds an unpaired surrogate. */
export function hasLoneSurrogate(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value)
  if (typeof value !== 'object' || value === null || depth > MAX_JSON_DEPTH) return false
  if (Array.isArray(value)) return value.some((v) => hasLoneSurrogate(v, depth + 1))
  for (const [k, v] of Object.entries(value)) if (LONE_SURROGATE.test(k) || hasLoneSurrogate(v, depth + 1)) return true
  return false
}

interface NodeStream {
  readableEnded: boolean
  on(event: string, fn: (arg?: unknown) => void): unknown
  off(event: string, fn: (arg?: unknown) => void): unknown
  pause(): unknown
}

function isNodeStream(v: unknown): v is NodeStream {
  return typeof v === 'object' && v !== null && typeof (v as NodeStream).on === 'function' && (v as NodeStream).readableEnded === false
}

/**
 * Under @hono/node-server the body is read straight from the IncomingMessage: no web stream
 * is ever created for it, which saves several allocations per request. Over the limit it stops
 * reading (pauses) rather than destroying the socket, so the client still gets its 413.
 */
function readNodeLimited(incoming: NodeStream, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = []
    let total = 0
    const cleanup = (): void => {
      incoming.off('data', onData)
      incoming.off('end', onEnd)
      incoming.off('error', onError)
      incoming.off('close', onError)
    }
    const onData = (chunk?: unknown): void => {
      const bytes = chunk as Uint8Array
      total += bytes.byteLength
      if (total > limit) {
        cleanup()
        incoming.pause()
        reject(errors.payloadTooLarge(limit))
      } else chunks.push(bytes)
    }
    const onEnd = (): void => {
      cleanup()
      resolve(concat(chunks, total))
    }
    const onError = (): void => {
      cleanup()
      reject(errors.invalidJson('Request body could not be read'))
    }
    incoming.on('data', onData)
    incoming.on('end', onEnd)
    incoming.on('error', onError)
    // A client that disconnects mid-body may only produce 'close': never leave the read pending.
    incoming.on('close', onError)
  })
}

async function readLimited(req: Request, limit: number): Promise<Uint8Array> {
  if (req.body === null) return new Uint8Array(0)
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let step: Awaited<ReturnType<typeof reader.read>>
    try {
      step = await reader.read()
    } catch {
      throw errors.invalidJson('Request body could not be read')
    }
    if (step.done) break
    total += step.value.byteLength
    if (total > limit) {
      reader.cancel().catch(() => {})
      throw errors.payloadTooLarge(limit)
    }
    chunks.push(step.value)
  }
  return concat(chunks, total)
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return out
}

/** The deepest nesting of arrays and objects in a JSON text (strings are skipped). */
export function jsonDepth(text: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    if (inString) {
      if (ch === 92) i++ // backslash: skip the escaped character
      else if (ch === 34) inString = false
    } else if (ch === 34) inString = true
    else if (ch === 123 || ch === 91) {
      if (++depth > max) max = depth
    } else if (ch === 125 || ch === 93) depth--
  }
  return max
}
