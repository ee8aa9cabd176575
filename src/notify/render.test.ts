import { describe, expect, it } from 'vitest'
import type { TemplateRow } from '../store/directory.js'
import { chooseTemplate, createRenderer, dependsOnRecipient, localeChain, type RenderContext } from './render.js'

let nextId = 1
const tpl = (locale: string, version: number, over: Partial<TemplateRow> = {}): TemplateRow => ({
  id: nextId++,
  topic: 't',
  channel: 'email',
  locale,
  version,
  subject: `${locale} v${version}`,
  body: '',
  format: 'text',
  active: true,
  createdAt: 0,
  ...over,
})

describe('template choice', () => {
  it('falls back fr-CA → fr → en', () => {
    expect(localeChain('fr-CA')).toEqual(['fr-CA', 'fr', 'en'])
    expect(localeChain(null)).toEqual(['en'])
    // One subtag at a time: a script-tagged locale finds its script before the bare language.
    expect(localeChain('zh-Hant-TW')).toEqual(['zh-Hant-TW', 'zh-Hant', 'zh', 'en'])
    expect(localeChain('sr_Latn_RS')).toEqual(['sr_Latn_RS', 'sr-Latn', 'sr', 'en'])
    expect(chooseTemplate([tpl('zh', 1), tpl('zh-Hans', 1), tpl('zh-Hant', 1), tpl('en', 1)], 'zh-Hant-TW')!.subject).toBe('zh-Hant v1')
    expect(chooseTemplate([tpl('zh', 1), tpl('zh-Hans', 1)], 'zh-Hant-TW')!.subject).toBe('zh v1')
    const all = [tpl('en', 1), tpl('fr', 1), tpl('fr-CA', 1)]
    expect(chooseTemplate(all, 'fr-CA')!.subject).toBe('fr-CA v1')
    expect(chooseTemplate(all.slice(0, 2), 'fr-CA')!.subject).toBe('fr v1')
    expect(chooseTemplate(all.slice(0, 1), 'fr-CA')!.subject).toBe('en v1')
    expect(chooseTemplate([tpl('de', 1)], 'fr-CA')).toBeNull()
    // pt_BR and pt-BR are the same tag, whichever side writes the underscore.
    expect(chooseTemplate([tpl('pt-BR', 1)], 'pt_BR')!.locale).toBe('pt-BR')
    expect(chooseTemplate([tpl('pt_br', 1)], 'PT-BR')!.locale).toBe('pt_br')
  })
  it('takes the highest active version', () => {
    const all = [tpl('en', 1), tpl('en', 3, { active: false }), tpl('en', 2)]
    expect(chooseTemplate(all, 'en')!.subject).toBe('en v2')
  })
  it('skips a locale whose versions are all inactive', () => {
    expect(chooseTemplate([tpl('fr', 1, { active: false }), tpl('en', 1)], 'fr')!.subject).toBe('en v1')
  })
})

describe('rendering', () => {
  const render = createRenderer()
  const ctx: RenderContext = {
    topic: 'comment.created',
    title: 'New <comment>',
    body: 'Hello',
    severity: 'info',
    action_url: null,
    payload: { author: 'Ann & <Bob>', count: 3 },
    recipient: { id: 'u1', name: 'Zoé', email: null, locale: 'fr' },
  }
  it('uses title (default the topic) and body as given without a template', () => {
    expect(render(null, ctx)).toMatchObject({ title: 'New <comment>', body: 'Hello', templateId: null })
    expect(render(null, { ...ctx, title: null, body: null })).toMatchObject({ title: 'comment.created', body: '' })
  })
  it('renders Liquid with filters; missing values render empty', () => {
    const r = render(tpl('en', 1, { subject: '{{ payload.count }} from {{ payload.author | upcase }}', body: 'Hi {{ recipient.name }}{{ payload.nope.deeper }}!' }), ctx)
    expect(r.title).toBe('3 from ANN & <BOB>')
    expect(r.body).toBe('Hi Zoé!')
  })
  it('escapes values in html templates, but not in the subject', () => {
    const r = render(tpl('en', 1, { format: 'html', subject: '{{ title }}', body: '<p>{{ payload.author }}</p>' }), ctx)
    expect(r.body).toBe('<p>Ann &amp; &lt;Bob&gt;</p>')
    expect(r.title).toBe('New <comment>')
    expect(r.format).toBe('html')
  })
  it('does not escape text templates', () => {
    expect(render(tpl('en', 1, { body: '{{ payload.author }}' }), ctx).body).toBe('Ann & <Bob>')
  })
})

describe('runaway templates', () => {
  it('fall back to the raw title and body instead of stalling', () => {
    const render = createRenderer()
    const ctx: RenderContext = { topic: 't', title: 'T', body: 'B', severity: 'info', action_url: null, payload: {}, recipient: { id: 'u', name: null, email: null, locale: null } }
    const r = render(tpl('en', 1, { body: '{% for i in (1..100000000) %}{{ i }}{% endfor %}' }), ctx)
    expect(r).toMatchObject({ title: 'T', body: 'B', templateId: null })
  })

  it('say whether they ran out of time or failed otherwise', () => {
    const render = createRenderer()
    const ctx: RenderContext = { topic: 't', title: 'T', body: 'B', severity: 'info', action_url: null, payload: {}, recipient: { id: 'u', name: null, email: null, locale: null } }
    expect(render(tpl('en', 1, { body: "{% include 'nope' %}" }), ctx).timedOut).toBeUndefined()
    expect(render(tpl('en', 1, { body: '{% for i in (1..1000) %}{% endfor %}' }), ctx, 0).timedOut).toBe(true)
  })
})

describe('recipient dependence (a template that cannot reach `recipient` renders once per notification)', () => {
  const cases: [string, string, boolean][] = [
    ['markdown link, no recipient', '[docs](https://x.example/{{ payload.id }}) for {{ title }}', false],
    ['array index on payload', '{{ payload.items[0].name }} {{ payload["k"] }}', false],
    ['the word in text only', 'Dear recipient, {{ title }}', false],
    ['a comment or raw block', '{% comment %}{{ recipient }}{% endcomment %}{% raw %}{{ recipient.id }}{% endraw %}', false],
    ['a local of that name', '{% assign recipient = payload.who %}{{ recipient.name }}', false],
    ['another variable sharing the prefix', '{{ recipient_name }}', false],
    ['a property', 'Hi {{ recipient.name }}', true],
    ['in a loop', '{% for i in (1..30) %}- {{ i }} {{ recipient.id }}\n{% endfor %}', true],
    ['in a condition', '{% if recipient.locale == "fr" %}Bonjour{% endif %}', true],
    ['through an alias', '{% assign r = recipient %}{{ r.id }}', true],
    ['as a filter argument', '{{ title | append: recipient.name }}', true],
    ['as an index', '{{ payload.names[recipient.id] }}', true],
    ['a quoted root', "{{ ['recipient'].id }}", true],
    ['inside a liquid tag', '{% liquid\necho recipient.email\n%}', true],
    ['a computed root that could name it', "{% assign k = 'recipient' %}{{ [k].id }}", true],
    ['a computed root on a later line', "x\n{% liquid\nassign k = payload.k\necho [ k ].id\n%}", true],
    ['used before a local shadows it', '{{ recipient.id }}{% assign recipient = 1 %}', true],
    ['not analysable (stored unparsable): the safe answer', '{{ [k].id ', true],
  ]
  it.each(cases)('%s', (_, body, expected) => {
    expect(dependsOnRecipient(tpl('en', 1, { body }))).toBe(expected)
  })

  it('reads the subject too; no template never depends on the recipient', () => {
    expect(dependsOnRecipient(tpl('en', 1, { subject: 'For {{ recipient.name }}', body: '[a](b)' }))).toBe(true)
    expect(dependsOnRecipient(null)).toBe(false)
  })

  it('a template too large to analyse quickly is rendered per recipient (the safe answer)', () => {
    const links = '[a](https://example.com) '.repeat(700)
    expect(links.length).toBeGreaterThan(15_000)
    expect(dependsOnRecipient(tpl('en', 1, { body: links }))).toBe(false)
    expect(dependsOnRecipient(tpl('en', 2, { body: links.repeat(2) }))).toBe(true)
  })
})
