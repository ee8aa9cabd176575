import { afterEach, describe, expect, it } from 'vitest'
import net, { type AddressInfo, type Socket } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

/** A TCP server on 127.0.0.1 that treats each connection with `onConnection`; closed after each test. */
const servers: net.Server[] = []
const sockets = new Set<Socket>()
async function tcpServer(onConnection: (s: Socket) => void): Promise<number> {
  const server = net.createServer((s) => {
    sockets.add(s)
    s.on('error', () => {})
    onConnection(s)
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

/** A port nothing listens on: one just released. */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

let h: NotifyHarness | undefined
afterEach(async () => {
  await h?.cleanup()
  h = undefined
  for (const s of sockets) s.destroy()
  sockets.clear()
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
})

/** Sends one email through the harness to `smtpUrl` and returns its one attempt's error and response body. */
async function attemptOf(smtpUrl: string): Promise<{ error: string | null; responseBody: string | null; status: string }> {
  h = await notifyHarness({ smtpUrl })
  await h.notify.users.put('u1', { email: 'ann@example.com' })
  const { id } = await h.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['email'] })
  await h.drain()
  const [d] = await h.store.deliveries.byNotification(id)
  const attempts = await h.store.deliveries.attempts(d!.id)
  expect(attempts).toHaveLength(1)
  expect(d!.lastError).toBe(attempts[0]!.error)
  return { error: attempts[0]!.error, responseBody: attempts[0]!.responseBody, status: d!.status }
}

/** The attempt's error and status: the transport's message in its response body is checked apart. */
async function attemptError(smtpUrl: string): Promise<{ error: string | null; status: string }> {
  const { error, status } = await attemptOf(smtpUrl)
  return { error, status }
}

describe('email transport errors are stored as the webhook channel\'s stable codes', () => {
  it('nothing listening: connection_refused (a retry)', async () => {
    expect(await attemptError(`smtp://127.0.0.1:${await closedPort()}`)).toEqual({ error: 'connection_refused', status: 'pending' })
  })

  it('a server that resets the connection: connection_reset', async () => {
    const port = await tcpServer((s) => s.resetAndDestroy())
    expect(await attemptError(`smtp://127.0.0.1:${port}`)).toEqual({ error: 'connection_reset', status: 'pending' })
  })

  it('TLS to a server that speaks plain SMTP: tls_error', async () => {
    const port = await tcpServer((s) => s.write('220 plain.example ESMTP\r\n'))
    expect(await attemptError(`smtps://127.0.0.1:${port}`)).toEqual({ error: 'tls_error', status: 'pending' })
  })
})

describe('the transport\'s own message is kept in the attempt\'s response_body', () => {
  it('tells a wrong port (plain SMTP behind smtps://) from a certificate the client refuses', async () => {
    const plain = await tcpServer((s) => s.write('220 plain.example ESMTP\r\n'))
    const wrongPort = await attemptOf(`smtps://127.0.0.1:${plain}`)
    await h?.cleanup()
    // smtp-server's built-in certificate is one no client accepts (self-signed, and expired).
    const tls = new SMTPServer({ secure: true, authOptional: true, logger: false })
    tls.on('error', () => {})
    servers.push(tls.server)
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve))
    const badCert = await attemptOf(`smtps://127.0.0.1:${(tls.server.address() as AddressInfo).port}`)
    expect([wrongPort.error, badCert.error]).toEqual(['tls_error', 'tls_error'])
    expect(wrongPort.responseBody).toMatch(/wrong version number|packet length|disconnected before secure TLS/i)
    expect(badCert.responseBody).toMatch(/certificate/i)
    expect(wrongPort.responseBody).not.toMatch(/certificate/i)
    expect(wrongPort.responseBody).not.toContain('\n')
  })

  it('a refused connection names the address it tried', async () => {
    const port = await closedPort()
    expect(await attemptOf(`smtp://127.0.0.1:${port}`)).toMatchObject({ error: 'connection_refused', responseBody: `connect ECONNREFUSED 127.0.0.1:${port}` })
  })
})
