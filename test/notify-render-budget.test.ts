import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../src/log.js'
import { createRenderer, RENDER_BUDGET_MS, RENDER_LIMIT_MS, type Renderer } from '../src/notify/render.js'
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
function harnessWith(rendering: ReturnType<typeof countedRenderer>['rendering']) {
  const warnings: { msg: string; error?: string }[] = []
  const log = createLogger('warn', { write: (s: string) => void warnings.push(JSON.parse(s)) })
  h = notifyHarness({}, { rendering, log })
  return warnings
}

const users = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`)
const inboxTitles = (h: NotifyHarness, id: string) =>
  h.store.deliveries.byNotification(id).map((d) => decodePayload(d.payload, d)!.title)

describe('render limits per notification (the accept transaction blocks the process while it renders)', () => {
  it('a template that fails for one recipient is not rendered again for the others: they get the fallback at once', () => {
    const { state, rendering } = countedRenderer(1)
    const warnings = harnessWith(rendering)
    // Fails at render time (no files to include), after naming the recipient: rendered per recipient.
    h.notify.templates.put({ topic: 'cpu.t', channel: 'inbox', locale: 'en', subject: '{{ recipient.id }}', body: "{% include 'nope' %}" })
    const r = h.notify.notifications.send({ topic: 'cpu.t', recipients: users(20), title: 'Raw title' })
    expect(r.deliveries).toBe(20)
    expect(state.renders).toBe(1)
    expect(inboxTitles(h, r.id)).toEqual(Array(20).fill('Raw title'))
    expect(warnings.filter((w) => /failed to render/.test(w.msg))).toHaveLength(1)
    // The next notification gives the template a new chance.
    h.notify.notifications.send({ topic: 'cpu.t', recipients: users(3) })
    expect(state.renders).toBe(2)
  })

  it(`all renders of one notification share ${RENDER_BUDGET_MS} ms; after it the remaining recipients get the fallback`, () => {
    const { state, rendering } = countedRenderer(300)
    const warnings = harnessWith(rendering)
    h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.id }}', body: 'b' })
    const r = h.notify.notifications.send({ topic: 'hi', recipients: users(10), title: 'Raw' })
    // 0, 300, 600 and 900 ms spent before each of the first four renders; then 1,200 ≥ 1,000.
    expect(state.renders).toBe(4)
    expect(inboxTitles(h, r.id)).toEqual(['Hi u0', 'Hi u1', 'Hi u2', 'Hi u3', ...Array(6).fill('Raw')])
    // Each render may use at most what is left of the budget, and never more than the per-render limit.
    expect(state.limits).toEqual([RENDER_LIMIT_MS, RENDER_LIMIT_MS, RENDER_LIMIT_MS, 100])
    expect(warnings.filter((w) => /budget spent/.test(w.msg))).toHaveLength(1)
    expect(warnings.filter((w) => /failed to render/.test(w.msg))).toHaveLength(0)
  })

  it('a template that does not name the recipient renders once per notification, within the budget', () => {
    const { state, rendering } = countedRenderer(300)
    harnessWith(rendering)
    h.notify.templates.put({ topic: 'hi', channel: 'inbox', locale: 'en', subject: 'Hello {{ title }}', body: 'b' })
    const r = h.notify.notifications.send({ topic: 'hi', recipients: users(10), title: 'all' })
    expect(state.renders).toBe(1)
    expect(inboxTitles(h, r.id)).toEqual(Array(10).fill('Hello all'))
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
