import { describe, expect, it } from 'vitest'
import { smtpError, smtpFailure, smtpTransportCode } from './smtp-errors.js'

/** An error shaped as nodemailer's `_formatError` leaves it: its own `code`, the system `errno` kept. */
const nm = (message: string, code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), { code, ...extra })

describe('SMTP error codes', () => {
  it('maps transport failures to the webhook channel\'s codes', () => {
    expect(smtpError(nm('connect ECONNREFUSED 127.0.0.1:2525', 'ESOCKET', { errno: -111, syscall: 'connect' }))).toBe('connection_refused')
    expect(smtpError(nm('read ECONNRESET', 'ESOCKET', { errno: -104 }))).toBe('connection_reset')
    expect(smtpError(nm('getaddrinfo ENOTFOUND mail.invalid', 'EDNS', { errno: -3008 }))).toBe('dns_failure')
    expect(smtpError(nm('getaddrinfo EAI_AGAIN mail.example', 'EDNS', { errno: -3001 }))).toBe('dns_failure')
    expect(smtpError(nm('queryA ESERVFAIL mail.example', 'EDNS'))).toBe('dns_failure')
    expect(smtpError(nm('connect EHOSTUNREACH 10.0.0.1:25', 'ESOCKET', { errno: -113 }))).toBe('host_unreachable')
    expect(smtpError(nm('Greeting never received', 'ETIMEDOUT'))).toBe('timeout')
    expect(smtpError(nm('Connection timeout', 'ETIMEDOUT'))).toBe('timeout')
    expect(smtpError(nm('Error initiating TLS - boom', 'ETLS'))).toBe('tls_error')
    expect(smtpError(nm('self-signed certificate', 'ESOCKET'))).toBe('tls_error')
    expect(smtpError(nm('Connection closed unexpectedly', 'ECONNECTION'))).toBe('connection_reset')
    expect(smtpError(new Error('Unexpected socket close'))).toBe('connection_reset')
    expect(smtpError(nm('something odd on the socket', 'ESOCKET'))).toBe('network_error')
  })

  it('keeps an SMTP reply\'s text, and the message of errors that are not transport failures', () => {
    const reply = nm("Can't send mail - all recipients were rejected: 550 mailbox unavailable", 'EENVELOPE', { responseCode: 550, response: '550 mailbox unavailable' })
    expect(smtpError(reply)).toBe(reply.message)
    // A 421 "closing connection" reply is a reply, not a reset.
    expect(smtpError(nm('Connection closed unexpectedly: 421 bye', 'ECONNECTION', { responseCode: 421 }))).toBe('Connection closed unexpectedly: 421 bye')
    expect(smtpTransportCode(nm('Missing credentials for "PLAIN"', 'EAUTH'))).toBeNull()
    expect(smtpError(nm('Missing credentials for "PLAIN"', 'EAUTH'))).toBe('Missing credentials for "PLAIN"')
    expect(smtpError(nm('x'.repeat(600), 'EMESSAGE'))).toHaveLength(500)
  })

  it('stores a transport failure\'s first message line as the response; a reply as itself; nothing twice', () => {
    expect(smtpFailure(nm('C0:error:0A00010B:SSL routines:ssl3_get_record:wrong version number\nstack', 'ESOCKET'))).toEqual({
      error: 'tls_error',
      responseBody: 'C0:error:0A00010B:SSL routines:ssl3_get_record:wrong version number',
    })
    expect(smtpFailure(nm('self-signed certificate', 'ESOCKET'))).toEqual({ error: 'tls_error', responseBody: 'self-signed certificate' })
    expect(smtpFailure(nm('x'.repeat(600), 'ETIMEDOUT')).responseBody).toHaveLength(500)
    const reply = nm("Can't send mail - all recipients were rejected: 451 try later", 'EENVELOPE', { responseCode: 451, response: '451 try later' })
    expect(smtpFailure(reply)).toEqual({ error: reply.message, responseBody: '451 try later' })
    expect(smtpFailure(nm('Missing credentials for "PLAIN"', 'EAUTH'))).toEqual({ error: 'Missing credentials for "PLAIN"', responseBody: null })
  })
})
