import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, serverEnv, startServer } from './support/server-process.js'

/** SIGTERM ends live inbox streams cleanly (the client reads the end of the body) before the drain. */
describe('shutdown with open inbox streams', () => {
  beforeAll(async () => {
    await ensureBuilt()
  }, 180_000)
  afterAll(async () => killAllChildren())

  it('ends each SSE stream with a clean end of body, and exits 0', async () => {
    const t = tempDir('postbox-sse-stop-')
    const key = newAdminKey()
    const server = await startServer(serverEnv(t.dir, key))
    try {
      const call = apiClient(() => server.baseUrl, key)
      const { json } = await call('POST', '/v1/users/u_1/tokens', {})
      const res = await fetch(`${server.baseUrl}/v1/inbox/stream`, { headers: { authorization: `Bearer ${json.token as string}` } })
      expect(res.status).toBe(200)
      const reader = res.body!.getReader()
      let text = ''
      while (!text.includes(': connected')) text += new TextDecoder().decode((await reader.read()).value)
      const exited = server.stop()
      // Read to the end: a stream cut by the server's last-resort closeAllConnections would throw.
      for (;;) {
        const { done } = await reader.read()
        if (done) break
      }
      expect(await exited).toBe(0)
    } finally {
      await server.kill()
      t.cleanup()
    }
  }, 60_000)
})
