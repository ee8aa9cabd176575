/**
 * Finding 2 of issue #36: markdown nested 2,000 blockquotes deep overflowed marked's stack: a 500
 * on POST /v1/templates/preview and an email that died with `internal`. Nesting is bounded
 * before rendering (src/notify/markdown-depth.ts). Both backends (notify-*.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../src/api/app.js'
import { createApiKey } from '../src/auth/keys.js'
import { silentLogger } from '../src/log.js'
import { MARKDOWN_TOO_DEEP } from '../src/notify/markdown-depth.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

let h: NotifyHarness | undefined
afterEach(async () => {
  await h?.cleanup()
  h = undefined
})

const DEEP_QUOTES = '>'.repeat(2000) + ' deep'
const DEEP_LISTS = '- '.repeat(2000) + 'deep'
const LONG_EMPHASIS = '*'.repeat(10_000) + 'x' + '*'.repeat(10_000)

async function api() {
  // Nothing listens on port 9 of 127.0.0.1: an email that got as far as the transport would retry.
  h = await notifyHarness({ smtpUrl: 'smtp://127.0.0.1:9' })
  const app = createApp({ store: h.store, config: h.config, log: silentLogger(), clock: h.clock, webhooks: {} as WebhookService, notify: h.notify })
  const admin = (await createApiKey(h.store, { name: 'a', role: 'admin' }, h.clock.now())).key
  const call = async (method: string, path: string, body: unknown) => {
    const res = await app.request(path, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as { error?: { code: string; details?: { field: string }[] } } }
  }
  return { call }
}

describe('markdown nested too deep is a 4xx, never a 5xx', () => {
  it.each([['blockquotes', DEEP_QUOTES], ['list items', DEEP_LISTS]])('PUT /v1/templates with %s 2,000 deep: 400 validation_failed on body', async (_, md) => {
    const { call } = await api()
    const r = await call('PUT', '/v1/templates', { topic: 't', channel: 'email', format: 'markdown', body: md })
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'body' }] } } })
    // As text the same body is fine: only markdown is parsed.
    expect((await call('PUT', '/v1/templates', { topic: 't', channel: 'email', format: 'text', body: md })).status).toBe(201)
  })

  it('POST /v1/templates/preview: a draft is 400 on template.body; a rendering made deep by its data is 422 markdown_too_deep', async () => {
    const { call } = await api()
    const draft = await call('POST', '/v1/templates/preview', { topic: 't', channel: 'email', template: { format: 'markdown', body: DEEP_QUOTES } })
    expect(draft).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'template.body' }] } } })
    for (const md of [DEEP_QUOTES, DEEP_LISTS, LONG_EMPHASIS]) {
      const r = await call('POST', '/v1/templates/preview', { topic: 't', channel: 'email', data: { md }, template: { format: 'markdown', body: '{{ payload.md }}' } })
      expect(r).toMatchObject({ status: 422, body: { error: { code: MARKDOWN_TOO_DEEP } } })
    }
    const ok = await call('POST', '/v1/templates/preview', { topic: 't', channel: 'email', data: { md: '> > - quoted *list*' }, template: { format: 'markdown', body: '{{ payload.md }}' } })
    expect(ok.status).toBe(200)
  })

  it('an email whose markdown nests too deep ends dead with markdown_too_deep, not internal, after one attempt', async () => {
    const { call } = await api()
    expect((await call('PUT', '/v1/templates', { topic: 't', channel: 'email', format: 'markdown', body: '{{ payload.md }}' })).status).toBe(201)
    await h!.notify.users.put('u1', { email: 'ann@example.com' })
    const { id } = await h!.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['email'], data: { md: DEEP_QUOTES } })
    await h!.drain()
    const [d] = await h!.store.deliveries.byNotification(id)
    expect(d).toMatchObject({ status: 'dead', lastError: MARKDOWN_TOO_DEEP, attempts: 1 })
  })
})
