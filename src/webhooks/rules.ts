import type { z } from '@hono/zod-openapi'
import { AppError, errors } from '../errors.js'
import { parseDuration } from '../lib/duration.js'
import { createAddressPolicy, literalIp, type AddressPolicy } from '../delivery/ssrf.js'
import { isPostboxHeader } from '../delivery/http-target.js'

/** One entry of a `validation_failed` error's details. */
export interface Issue {
  path: string
  message: string
}

/** Parses `input` with a zod schema or throws 400 validation_failed listing every issue. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, prefix = ''): z.infer<S> {
  const r = schema.safeParse(input)
  if (r.success) return r.data
  const details: Issue[] = r.error.issues.map((i) => ({
    path: [prefix, ...i.path.map(String)].filter((p) => p !== '').join('.'),
    message: i.message,
  }))
  throw errors.validation(details)
}

/** Throws validation_failed when `issues` is not empty. */
export function throwIfIssues(issues: readonly Issue[]): void {
  if (issues.length > 0) throw errors.validation(issues)
}

/** HTTP token characters (RFC 9110 §5.6.2). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** Headers the HTTP layer owns; with the ones Postbox sets (isPostboxHeader), custom headers may not set them (any case). */
const TRANSPORT_HEADERS = new Set([
  'content-length', 'host', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect', 'proxy-connection',
])
/** Custom headers per endpoint. */
export const MAX_CUSTOM_HEADERS = 50
/**
 * Bytes of custom headers per endpoint (names, values and `: ` + CRLF each). Receivers cap a
 * request's headers (Node at 16 KiB, many proxies at 8 KiB per line or 32 KiB in all): more
 * than this next to Postbox's own headers would fail every request with 431.
 */
export const MAX_CUSTOM_HEADER_BYTES = 8192

/**
 * What a header value may hold (RFC 9110 field-value: visible ASCII, space, tab, obs-text), which
 * is also what undici accepts: any other character would fail every request to the endpoint.
 */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/** Issues with custom headers: token names, values of field-value characters only, no reserved names. */
export function headerIssues(headers: Record<string, string>): Issue[] {
  const issues: Issue[] = []
  const names = Object.keys(headers)
  if (names.length > MAX_CUSTOM_HEADERS) issues.push({ path: 'headers', message: `at most ${MAX_CUSTOM_HEADERS} headers` })
  const bytes = names.reduce((n, name) => n + Buffer.byteLength(name) + Buffer.byteLength(headers[name]!, 'latin1') + 4, 0)
  if (bytes > MAX_CUSTOM_HEADER_BYTES) {
    issues.push({ path: 'headers', message: `at most ${MAX_CUSTOM_HEADER_BYTES} bytes of headers in all (these take ${bytes}): receivers would refuse every request with 431` })
  }
  const seen = new Set<string>()
  for (const name of names) {
    const lower = name.toLowerCase()
    const path = `headers.${name}`
    if (!TOKEN.test(name)) issues.push({ path, message: 'header name must be an HTTP token' })
    else if (TRANSPORT_HEADERS.has(lower) || isPostboxHeader(lower)) {
      issues.push({ path, message: 'this header is set by Postbox and cannot be overridden' })
    } else if (seen.has(lower)) issues.push({ path, message: 'duplicate header name (names are case-insensitive)' })
    if (!FIELD_VALUE.test(headers[name]!)) {
      issues.push({ path, message: 'header value must hold only visible ASCII, spaces, tabs or Latin-1 characters (no CR, LF or other control characters)' })
    }
    seen.add(lower)
  }
  return issues
}

/**
 * Checks an endpoint URL (docs/delivery.md): http or https, no credentials, a host, a port other than 0;
 * a literal IP that the SSRF policy refuses gives 422 destination_not_allowed. Returns the
 * normalised URL.
 */
export function checkUrl(raw: string, policy: AddressPolicy): string {
  // The URL parser forgives what a caller did not mean: `http:///x` and `http:x` become
  // `http://x/`, a backslash becomes a slash, tabs and newlines vanish. The text must already be
  // `scheme://host…`, without whitespace, control characters or backslashes.
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\\?#@\s]/i.test(raw) || /[\s\\\x00-\x1f\x7f]/.test(raw)) {
    throw errors.validation([{ path: 'url', message: 'must be an absolute URL written scheme://host/path, without spaces or backslashes' }])
  }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw errors.validation([{ path: 'url', message: 'must be an absolute URL' }])
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw errors.validation([{ path: 'url', message: 'scheme must be http or https' }])
  }
  if (url.username !== '' || url.password !== '') {
    throw errors.validation([{ path: 'url', message: 'must not contain credentials' }])
  }
  if (url.hostname === '') throw errors.validation([{ path: 'url', message: 'must have a host' }])
  // Port 0 is not a destination (connect would fail on every attempt); other ports are 1–65535 by URL parsing.
  if (url.port === '0') throw errors.validation([{ path: 'url', message: 'port must be from 1 to 65535' }])
  const ip = literalIp(url.hostname)
  if (ip !== null && !policy.isAllowed(ip)) {
    throw new AppError('destination_not_allowed', 422, `Destination ${ip} is not a public address`, [{ path: 'url', message: 'non-public address' }])
  }
  url.hash = ''
  return url.toString()
}

/** Converts `retry_schedule` items (duration strings or ms numbers) into milliseconds. */
export function parseRetrySchedule(items: readonly (string | number)[]): { schedule: number[] } | { issues: Issue[] } {
  const schedule: number[] = []
  const issues: Issue[] = []
  items.forEach((item, i) => {
    const ms = typeof item === 'number' ? item : parseDuration(item)
    if (ms === null || ms < 0 || ms > 86_400_000) issues.push({ path: `retry_schedule.${i}`, message: 'must be a duration from 0 to 24h' })
    else schedule.push(ms)
  })
  return issues.length > 0 ? { issues } : { schedule }
}

/** Builds the SSRF policy used for create/update checks. */
export function urlPolicy(allowNetworks: readonly string[]): AddressPolicy {
  return createAddressPolicy(allowNetworks)
}
