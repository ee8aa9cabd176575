/**
 * The hostile-input table (issue #36): every route that takes a schema, a template, markdown, a
 * filter, a duration or a time, crossed with the hostile values of that kind. A new route adds a
 * row to ROUTES, a new hostile value a row to VALUES: the next feature inherits every case.
 * test/api-hostile-table.test.ts runs the cross product; SECURITY.md lists what it covers.
 */

/** What a route takes that hostile input can target. */
export type HostileKind = 'schema' | 'template' | 'markdown' | 'filter' | 'duration' | 'time'

/** One hostile value: what it is, the value, and (for a case the server cannot bound yet) the finding that will. */
export interface HostileValue {
  name: string
  value: unknown
}

/** One request a route gets for a hostile value `v`. `auth` picks the credential. */
export interface HostileRoute {
  name: string
  kind: HostileKind
  auth: 'admin' | 'user'
  request: (v: unknown) => { method: string; path: string; body?: unknown }
}

const deep = (n: number, open: string, close = ''): string => open.repeat(n) + 'x' + close.repeat(n)
const nested = (n: number): unknown => {
  let v: unknown = { type: 'string' }
  for (let i = 0; i < n; i++) v = { type: 'object', properties: { a: v } }
  return v
}
/**
 * The recursive schema of issue #36's finding 1: each $defs entry refers twice to the one before,
 * so the schemas applied to one place of the data double with every level.
 */
export function refBomb(levels: number, leaf = 'integer'): Record<string, unknown> {
  const defs: Record<string, unknown> = { d0: { type: leaf } }
  for (let i = 1; i <= levels; i++) {
    const prev = { $ref: `#/$defs/d${i - 1}` }
    defs[`d${i}`] = { anyOf: [prev, { type: 'object', properties: { x: prev, y: prev } }] }
  }
  return { $defs: defs, $ref: `#/$defs/d${levels}` }
}

/** The hostile values of each kind. */
export const VALUES: Record<HostileKind, HostileValue[]> = {
  schema: [
    { name: 'schema nested 2,000 objects deep', value: nested(2000) },
    { name: 'a schema that refers to itself', value: { $ref: '#' } },
    { name: 'an unknown $ref', value: { $ref: 'http://169.254.169.254/latest/meta-data' } },
    { name: 'an enum of 100,000 strings', value: { enum: Array.from({ length: 100_000 }, (_, i) => `v${i}`) } },
    { name: 'not an object', value: 'string' },
    { name: 'a backtracking pattern', value: { type: 'string', pattern: '^(a+)+$' } },
    { name: 'a recursive schema 40 levels deep', value: refBomb(40, 'string') },
  ],
  template: [
    { name: 'a loop of 100 million', value: '{% for i in (1..100000000) %}x{% endfor %}' },
    { name: 'ifs nested 2,000 deep', value: deep(2000, '{% if true %}', '{% endif %}') },
    { name: 'output nested 2,000 filters long', value: `{{ 'x'${' | append: "x"'.repeat(2000)} }}` },
    { name: 'an unclosed tag', value: '{% for x in' },
    { name: 'an include of a server file', value: "{% include '/etc/passwd' %}" },
    { name: 'NUL and lone surrogates', value: 'a\u0000b\ud800c' },
  ],
  markdown: [
    { name: 'blockquotes 2,000 deep', value: '>'.repeat(2000) + ' x' },
    { name: 'list items 2,000 deep', value: '- '.repeat(2000) + 'x' },
    { name: 'quotes and lists mixed 2,000 deep', value: '> - '.repeat(1000) + 'x' },
    { name: 'a staircase of 1,000 indented list items', value: Array.from({ length: 1000 }, (_, i) => ' '.repeat(2 * i) + '- x').join('\n') },
    { name: 'an emphasis run of 20,000', value: deep(10_000, '*', '*') },
    { name: '50,000 opening brackets', value: '['.repeat(50_000) },
  ],
  filter: [
    { name: 'a regex-looking value', value: '(a+)+$' },
    { name: 'SQL', value: "x' OR 1=1 --" },
    { name: 'a LIKE wildcard', value: '%_%' },
    { name: 'a JSON path', value: '$.a[*]..b' },
    { name: '10,000 characters', value: 'a'.repeat(10_000) },
    { name: 'unicode edge cases', value: '\u202e\ufeff\ud83d\ude00' },
  ],
  duration: [
    { name: 'a space before the unit', value: '10 m' },
    { name: 'no unit', value: '0' },
    { name: 'a negative duration', value: '-1s' },
    { name: 'an exponent', value: '1e309s' },
    { name: 'twenty digits', value: '99999999999999999999d' },
    { name: 'non-ASCII digits', value: '\u0661s' },
    { name: 'two decimal points', value: '1.5.5s' },
    { name: 'not a string', value: { s: 1 } },
  ],
  time: [
    { name: 'February 30th', value: '2026-02-30T00:00:00Z' },
    { name: 'hour 24', value: '2026-01-01T24:00:00Z' },
    { name: 'an offset of +99:99', value: '2026-01-01T00:00:00+99:99' },
    { name: 'the largest JavaScript date', value: '+275760-09-13T00:00:00Z' },
    { name: 'year 0', value: '0000-01-01T00:00:00Z' },
    { name: 'year 9999', value: '9999-12-31T23:59:59Z' },
    { name: 'a word', value: 'now' },
    { name: 'a number', value: 1_700_000_000_000 },
  ],
}

const q = (v: unknown): string => encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))

/** Every route that takes one of the kinds, as one request per hostile value. */
export const ROUTES: HostileRoute[] = [
  { name: 'PUT /v1/event-types/:name schema', kind: 'schema', auth: 'admin', request: (v) => ({ method: 'PUT', path: '/v1/event-types/hostile.schema', body: { schema: v } }) },
  { name: 'PUT /v1/templates body', kind: 'template', auth: 'admin', request: (v) => ({ method: 'PUT', path: '/v1/templates', body: { topic: 'hostile', channel: 'email', body: v } }) },
  { name: 'PUT /v1/templates subject', kind: 'template', auth: 'admin', request: (v) => ({ method: 'PUT', path: '/v1/templates', body: { topic: 'hostile', channel: 'email', subject: v } }) },
  { name: 'POST /v1/templates/preview draft', kind: 'template', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/templates/preview', body: { topic: 'hostile', channel: 'email', template: { body: v } } }) },
  { name: 'PUT /v1/templates markdown body', kind: 'markdown', auth: 'admin', request: (v) => ({ method: 'PUT', path: '/v1/templates', body: { topic: 'hostile.md', channel: 'email', format: 'markdown', body: v } }) },
  { name: 'POST /v1/templates/preview markdown draft', kind: 'markdown', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/templates/preview', body: { topic: 'hostile', channel: 'email', template: { format: 'markdown', body: v } } }) },
  { name: 'POST /v1/templates/preview markdown from data', kind: 'markdown', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/templates/preview', body: { topic: 'hostile', channel: 'email', data: { md: v }, template: { format: 'markdown', body: '{{ payload.md }}' } } }) },
  { name: 'POST /v1/notifications body', kind: 'markdown', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/notifications', body: { topic: 'hostile', recipients: ['u_hostile'], title: 't', body: v } }) },
  { name: 'GET /v1/inbox ?topic&tags', kind: 'filter', auth: 'user', request: (v) => ({ method: 'GET', path: `/v1/inbox?topic=${q(v)}&tags=${q(v)}` }) },
  { name: 'GET /v1/inbox/counts ?tags', kind: 'filter', auth: 'user', request: (v) => ({ method: 'GET', path: `/v1/inbox/counts?tags=${q(v)}` }) },
  { name: 'POST /v1/inbox/read-all filter', kind: 'filter', auth: 'user', request: (v) => ({ method: 'POST', path: '/v1/inbox/read-all', body: { topic: v, tags: [v] } }) },
  { name: 'GET /v1/events ?type', kind: 'filter', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/events?type=${q(v)}` }) },
  { name: 'GET /v1/deliveries ?event_type', kind: 'filter', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/deliveries?event_type=${q(v)}` }) },
  { name: 'GET /v1/requests ?source&ref_id', kind: 'filter', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/requests?source=${q(v)}&ref_id=${q(v)}` }) },
  { name: 'GET /v1/notifications ?topic', kind: 'filter', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/notifications?topic=${q(v)}` }) },
  { name: 'POST /v1/endpoints event_types', kind: 'filter', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/endpoints', body: { url: 'https://example.com/h', event_types: [v] } }) },
  { name: 'POST /v1/requests delay', kind: 'duration', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/requests', body: { url: 'https://example.com/r', delay: v } }) },
  { name: 'POST /v1/requests retry_schedule', kind: 'duration', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/requests', body: { url: 'https://example.com/r', retry_schedule: [v] } }) },
  { name: 'POST /v1/events delay', kind: 'duration', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/events', body: { type: 'hostile.t', data: {}, delay: v } }) },
  { name: 'POST /v1/endpoints retry_schedule', kind: 'duration', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/endpoints', body: { url: 'https://example.com/h', retry_schedule: [v] } }) },
  { name: 'GET /v1/stats/timeseries ?bucket', kind: 'duration', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/stats/timeseries?bucket=${q(v)}` }) },
  { name: 'POST /v1/requests deliver_at', kind: 'time', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/requests', body: { url: 'https://example.com/r', deliver_at: v } }) },
  { name: 'POST /v1/events deliver_at', kind: 'time', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/events', body: { type: 'hostile.t', data: {}, deliver_at: v } }) },
  { name: 'POST /v1/events/batch deliver_at', kind: 'time', auth: 'admin', request: (v) => ({ method: 'POST', path: '/v1/events/batch', body: { events: [{ type: 'hostile.t', data: {}, deliver_at: v }] } }) },
  { name: 'GET /v1/notifications ?since', kind: 'time', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/notifications?since=${q(v)}&until=${q(v)}` }) },
  { name: 'GET /v1/stats/timeseries ?since&until', kind: 'time', auth: 'admin', request: (v) => ({ method: 'GET', path: `/v1/stats/timeseries?since=${q(v)}&until=${q(v)}` }) },
  { name: 'POST /v1/inbox/snooze until', kind: 'time', auth: 'user', request: (v) => ({ method: 'POST', path: '/v1/inbox/snooze', body: { ids: ['msg_x'], until: v } }) },
]
