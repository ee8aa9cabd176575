import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../src/log.js'
import { createRenderer, RENDER_LIMIT_MS, renderFallback, type Renderer } from '../src/notify/render.js'
import { RENDER_BUDGET_MS } from '../src/notify/render-budget.js'
import { decodePayload } from '../src/notify/delivery-payload.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

let h: NotifyHarness
afterEach(() => h?.cleanup())

/**
 * The real renderer, counted, on a fake monotonic timer that each render advances by `costMs`:
 * render time without wall-clock waits. `limits` records the time limit each render was given.
 */
function countedRenderer(costMs: number) {
  const real = createRenderer()
  const state = { renders: 0, t: 0, limits: [] as number[] }
  const render: Renderer = (template, ctx, limitMs) => {
    if (template !== null) {
      state.renders++
      state.limits.push(limitMs ?? Number.NaN)
      state.t += costMs
    }
    return real(template, ctx, limitMs)
  }
  return { state, rendering: { render, now: () => state.t } }
}

/** A harness whose warnings are captured as parsed JSON lines. */
async function harnessWith(rendering: ReturnType<typeof countedRenderer>['rendering']) {
  const warnings: { msg: string; error?: string }[] = []
  const log = createLogger('warn', { write: (s: string) => void warnings.push(JSON.parse(s)) })
  h = await notifyHarness({}, { rendering, log })
  return warnings
}

const users = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`)
const inboxTitles = async (h: NotifyHarness, id: string) =>
  (await h.store.deliveries.byNotification(id)).map((d) => decodePayload(d.payload, d)!.title)

describe('render limits per notification (the accept transaction blocks the process while it renders)', () => {
  it('a template that fails for one recipient is not rendered again for the others: they get the fallback at once', async () => {
    const { state, rendering } = countedRenderer(1)
    const warnings = await harnessWith(rendering)
    // Fails at render time (no files to include), after naming the recipient: rendered per recipient.
    await h.notify.templates.put({ topic: 'cpu.t', channel: 'inbox', locale: 'en', subject: '{{ recipient.id }}', body: "{% include 'nope' %}" })
    const r = await h.notify.notifications.send({ topic: 'cpu.t', recipients: users(20), title: 'Raw title' })
    expect(r.deliveries).toBe(20)
    expect(state.renders).toBe(1)
    expect(await inboxTitles(h, r.id)).toEqual(Array(20).fill('Raw title'))
    expect(warnings.filter((w) => /failed to render/.test(w.msg))).toHaveLength(1)
    // The next notification gives the template a new chance.
    await h.notify.notifications.send({ topic: 'cpu.t', recipients: users(3) })
    expect(state.renders).toBe(2)
  })

  it(`a slow template to a small audience stops after its first render (${RENDER_BUDGET_MS} ms budget; QA: 200 ms x 20)`, async () => {
    const { state, rendering } = countedRenderer(RENDER_LIMIT_MS)
    const warnings = await harnessWith(rendering)
    await h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.id }}', body: 'b' })
    const r = await h.notify.notifications.send({ topic: 'hi', recipients: users(20), title: 'Raw' })
    // 200 ms for one recipient says 4 s for twenty: the rest get the fallback at once.
    expect(state.renders).toBe(1)
    expect(await inboxTitles(h, r.id)).toEqual(['Hi u0', ...Array(19).fill('Raw')])
    expect(warnings.filter((w) => /budget spent/.test(w.msg))).toHaveLength(1)
    expect(warnings.filter((w) => /failed to render/.test(w.msg))).toHaveLength(0)
  })

  it('the budget grows with the audience: a 0.9 ms template renders for all of 2,000 recipients', async () => {
    // 1.8 s in all: over the 1 s floor, within the 2 s that 2,000 recipients allow.
    const { state, rendering } = countedRenderer(0.9)
    const warnings = await harnessWith(rendering)
    await h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.id }}', body: 'b' })
    const r = await h.notify.notifications.send({ topic: 'hi', recipients: users(2000), title: 'Raw' })
    expect(state.renders).toBe(2000)
    expect((await inboxTitles(h, r.id)).filter((t) => t === 'Raw')).toHaveLength(0)
    expect(warnings).toHaveLength(0)
  })

  it('a template whose average says the fan-out would overrun its budget stops once a tenth of it is spent', async () => {
    // 2 ms x 2,000 = 4 s > 2 s: judged after 200 ms (100 recipients), not after the whole 2 s.
    const { state, rendering } = countedRenderer(2)
    const warnings = await harnessWith(rendering)
    await h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.id }}', body: 'b' })
    const r = await h.notify.notifications.send({ topic: 'hi', recipients: users(2000), title: 'Raw' })
    expect(state.renders).toBe(100)
    expect((await inboxTitles(h, r.id)).filter((t) => t === 'Raw')).toHaveLength(1900)
    expect(warnings.filter((w) => /budget spent/.test(w.msg))).toHaveLength(1)
  })

  it('a render cut short only because the budget left it little time is the budget\'s end, not a failed template', async () => {
    // 95 ms each with the full limit: after nine (855 ms, 950 projected for ten) the tenth may
    // take only the 145 ms left, and this template needs more.
    const real = createRenderer()
    const state = { t: 0, limits: [] as number[] }
    const render: Renderer = (template, ctx, limitMs = RENDER_LIMIT_MS) => {
      state.limits.push(limitMs)
      if (limitMs < RENDER_LIMIT_MS) {
        state.t += limitMs
        return { ...renderFallback(ctx, 'template render limit exceeded'), timedOut: true }
      }
      state.t += 95
      return real(template, ctx, limitMs)
    }
    const warnings = await harnessWith({ render, now: () => state.t })
    await h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.id }}', body: 'b' })
    const r = await h.notify.notifications.send({ topic: 'hi', recipients: users(10), title: 'Raw' })
    expect(state.limits).toEqual([...Array(9).fill(RENDER_LIMIT_MS), 145])
    expect(await inboxTitles(h, r.id)).toEqual([...users(9).map((u) => `Hi ${u}`), 'Raw'])
    expect(warnings.filter((w) => /budget spent/.test(w.msg))).toHaveLength(1)
    expect(warnings.filter((w) => /failed to render/.test(w.msg))).toHaveLength(0)
  })

  it('a template with a markdown link and no `recipient` renders once per notification', async () => {
    const { state, rendering } = countedRenderer(1)
    await harnessWith(rendering)
    await h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: '{{ title }}', body: '[Open](https://x.example/{{ payload.id }})', format: 'markdown' })
    const r = await h.notify.notifications.send({ topic: 'hi', recipients: users(10), title: 'T', payload: { id: 7 } })
    expect(state.renders).toBe(1)
    expect((await h.store.deliveries.byNotification(r.id)).map((d) => decodePayload(d.payload, d)!.body)).toEqual(Array(10).fill('[Open](https://x.example/7)'))
  })

  it('a render gets at most the time it is given: with none left, the template falls back', () => {
    const render = createRenderer()
    const ctx = { topic: 't', title: 'T', body: 'B', severity: 'info', action_url: null, payload: {}, recipient: { id: 'u', name: null, email: null, locale: null } }
    // A short loop checks the clock once per iteration: some time always passes between them.
    const body = '{% for i in (1..1000) %}{% endfor %}done'
    const tpl = { id: 1, topic: 't', channel: 'inbox', locale: 'en', version: 1, subject: 'S', body, format: 'text' as const, active: true, createdAt: 0 }
    expect(render(tpl, ctx)).toMatchObject({ title: 'S', body: 'done', templateId: 1 })
    expect(render(tpl, ctx, 0)).toMatchObject({ title: 'T', body: 'B', templateId: null, error: expect.stringMatching(/limit exceeded/) })
  })
})
