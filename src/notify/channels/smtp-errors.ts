import { getSystemErrorName } from 'node:util'
import { transportErrorCode } from '../../delivery/http-util.js'

/**
 * What the email channel logs for a failed send, in the attempt log's `error`.
 *
 * Transport failures get the webhook channel's stable codes (`connection_refused`,
 * `connection_reset`, `dns_failure`, `host_unreachable`, `timeout`, `tls_error`,
 * `network_error`), so one alert rule or query covers both channels; an SMTP reply (4xx/5xx)
 * keeps its text, which names the server's reason, and its code goes to `status_code`.
 */
export function smtpError(err: unknown): string {
  const e = (err ?? {}) as { message?: unknown; responseCode?: unknown }
  const message = typeof e.message === 'string' ? e.message : String(err)
  if (typeof e.responseCode === 'number') return message.slice(0, 500)
  return smtpTransportCode(err) ?? message.slice(0, 500)
}

/**
 * A failed send's attempt-log fields: `error` as smtpError, and `response_body` holding what the
 * other side said: the SMTP reply when there is one, else for a transport failure (stored as a
 * code) the first line of the transport's message (`wrong version number`, `self-signed
 * certificate`, …), which tells a wrong port from a bad certificate. Null otherwise: an error
 * without a reply already keeps its message in `error`.
 */
export function smtpFailure(err: unknown): { error: string; responseBody: string | null } {
  const e = (err ?? {}) as { message?: unknown; response?: unknown }
  const error = smtpError(err)
  if (typeof e.response === 'string') return { error, responseBody: e.response }
  const message = typeof e.message === 'string' ? e.message : String(err)
  return { error, responseBody: error === message.slice(0, 500) ? null : message.split('\n')[0]!.slice(0, 500) }
}

/**
 * The stable code of a nodemailer transport error, or null when it is not one (an
 * authentication or envelope error without a reply, which keeps its message).
 * nodemailer replaces a socket error's `code` with its own (`ESOCKET`, `EDNS`, …) but keeps
 * the system `errno`, so that is read first.
 */
export function smtpTransportCode(err: unknown): string | null {
  if (!err || typeof err !== 'object') return null
  const e = err as { code?: unknown; errno?: unknown; message?: unknown }
  const message = typeof e.message === 'string' ? e.message : ''
  if (typeof e.errno === 'number' && e.errno < 0) {
    const code = transportErrorCode({ code: systemErrorName(e.errno) })
    if (code !== 'network_error') return code
  }
  switch (e.code) {
    case 'ETIMEDOUT':
      return 'timeout'
    case 'EDNS':
      return 'dns_failure'
    case 'ETLS':
      return 'tls_error'
    case 'ESOCKET':
    case 'ECONNECTION':
      if (/\b(SSL|TLS)\b|certificate/i.test(message)) return 'tls_error'
      return /closed|ended|hang up/i.test(message) ? 'connection_reset' : 'network_error'
  }
  // The pool's own messages: a connection that closed before the reply.
  if (/^(Unexpected socket close|Connection closed)/i.test(message)) return 'connection_reset'
  return null
}

function systemErrorName(errno: number): string {
  try {
    return getSystemErrorName(errno)
  } catch {
    return ''
  }
}
