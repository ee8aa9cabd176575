import type { Readable } from 'node:stream'
import { RESPONSE_BODY_LIMIT } from '../store/deliveries.js'
import { DESTINATION_NOT_ALLOWED } from './ssrf.js'

/**
 * Reads a response body up to 16 KiB and destroys the rest: the attempt log keeps no more, and
 * a receiver that streams forever must not hold the slot. A short body is read to its end, so
 * the keep-alive connection goes back to the pool.
 */
export async function readBodyCapped(
  body: Readable & AsyncIterable<Buffer> & { text(): Promise<string> },
  contentLength?: string | string[],
  limit = RESPONSE_BODY_LIMIT,
): Promise<string> {
  // The common case, a small declared body, takes undici's fast path.
  if (typeof contentLength === 'string' && /^\d+$/.test(contentLength) && Number(contentLength) <= limit) return body.text()
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of body) {
      chunks.push(chunk)
      size += chunk.length
      if (size >= limit) break
    }
  } finally {
    if (!body.readableEnded) body.destroy()
  }
  const text = Buffer.concat(chunks).subarray(0, limit).toString('utf8')
  // A cut in the middle of a multi-byte character leaves a replacement char; drop it.
  return size > limit ? text.replace(/\uFFFD$/, '') : text
}

/**
 * Settles with the request, or rejects as soon as `signal` aborts. undici does not interrupt a
 * connect in progress on abort, and a shutdown or a timeout must not wait for one; a response
 * that arrives after the abort has its body destroyed.
 */
export function abortable<T extends { body: { destroy(): unknown } }>(request: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      request.then((r) => r.body.destroy(), () => {})
      reject(signal.reason)
    }
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    request.then(
      (r) => (signal.removeEventListener('abort', onAbort), resolve(r)),
      (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e)),
    )
  })
}

const CODES: Record<string, string> = {
  ECONNREFUSED: 'connection_refused',
  ECONNRESET: 'connection_reset',
  EPIPE: 'connection_reset',
  ENOTFOUND: 'dns_failure',
  EAI_AGAIN: 'dns_failure',
  EHOSTUNREACH: 'host_unreachable',
  ENETUNREACH: 'host_unreachable',
  ETIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_SOCKET: 'connection_reset',
  UND_ERR_CLOSED: 'connection_reset',
}

/** Maps a transport error (walking its `cause` chain) to a stable attempt-log error code. */
export function transportErrorCode(err: unknown): string {
  let e: unknown = err
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code
    if (code === DESTINATION_NOT_ALLOWED) return DESTINATION_NOT_ALLOWED
    if (typeof code === 'string') {
      if (CODES[code]) return CODES[code]
      if (/CERT|SSL|TLS/i.test(code)) return 'tls_error'
    }
    e = (e as { cause?: unknown }).cause
  }
  return 'network_error'
}
