import { DESTINATION_NOT_ALLOWED } from './ssrf.js'

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
