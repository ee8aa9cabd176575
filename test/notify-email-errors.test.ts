import { afterEach, describe, expect, it } from 'vitest'
import net, { type AddressInfo, type Socket } from 'node:net'
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
  h?.cleanup()
  h = undefined
  for (const s of sockets) s.destroy()
  sockets.clear()
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
})

/** Sends one email through the harness to `smtpUrl` and returns the attempt log's error of its one attempt. */
async function attemptError(smtpUrl: string): Promise<{ error: string | null; status: string }> {
  h = notifyHarness({ smtpUrl })
  h.notify.users.put('u1', { email: 'ann@example.com' })
  const { id } = h.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['email'] })
  await h.drain()
  const [d] = h.store.deliveries.byNotification(id)
  const attempts = h.store.deliveries.attempts(d!.id)
  expect(attempts).toHaveLength(1)
  expect(d!.lastError).toBe(attempts[0]!.error)
  return { error: attempts[0]!.error, status: d!.status }
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
