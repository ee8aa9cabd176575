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

/** Why a certificate was refused, by the code Node gives (OpenSSL's verify result, or its own name check). */
const TLS_REASONS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed certificate in the chain',
  UNABLE_TO_GET_ISSUER_CERT: 'unknown issuer',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'unknown issuer',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'unknown issuer',
  CERT_UNTRUSTED: 'unknown issuer',
  CERT_HAS_EXPIRED: 'certificate expired',
  CERT_NOT_YET_VALID: 'certificate not yet valid',
  ERR_TLS_CERT_ALTNAME_INVALID: 'name mismatch',
  CERT_REVOKED: 'certificate revoked',
}

/** True for the codes of a TLS failure (UNABLE_TO_VERIFY_LEAF_SIGNATURE names none of CERT, SSL or TLS). */
const isTlsCode = (code: string): boolean => code in TLS_REASONS || /CERT|SSL|TLS/i.test(code)

/** The longest reason text kept after `tls_error: `. */
const TLS_REASON_MAX = 200

/**
 * A transport error as the attempt log keeps it: the stable code of `transportErrorCode`, and for
 * `tls_error` the reason after it, `tls_error: <reason> (<Node's code>)` (self-signed certificate,
 * unknown issuer, certificate expired, name mismatch; otherwise the first line of the message).
 */
export function transportErrorText(err: unknown): string {
  const code = transportErrorCode(err)
  if (code !== 'tls_error') return code
  let e: unknown = err
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const c = (e as { code?: unknown }).code
    if (typeof c === 'string' && isTlsCode(c)) {
      const reason = TLS_REASONS[c] ?? String((e as { message?: unknown }).message ?? '').split('\n')[0]!.slice(0, TLS_REASON_MAX)
      return `tls_error: ${reason} (${c})`
    }
    e = (e as { cause?: unknown }).cause
  }
  return code
}

/** Maps a transport error (walking its `cause` chain) to a stable attempt-log error code. */
export function transportErrorCode(err: unknown): string {
  let e: unknown = err
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code
    if (code === DESTINATION_NOT_ALLOWED) return DESTINATION_NOT_ALLOWED
    if (typeof code === 'string') {
      if (CODES[code]) return CODES[code]
      if (isTlsCode(code)) return 'tls_error'
    }
    e = (e as { cause?: unknown }).cause
  }
  return 'network_error'
}
