import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'
import { startReceiver, type Receiver } from './support/receiver.js'

/** The credential kinds of the table, in column order. */
const CREDS = ['admin', 'viewer', 'publisher', 'scopedA', 'portalA', 'readOnlyA', 'user'] as const
type Cred = (typeof CREDS)[number]

/** Ids of app A's (or B's) resources, substituted into paths as {ep}, {evt}, {dlv}, {req}, {ntf}, {app}. */
interface Ids {
  app: string
  ep: string
  evt: string
  dlv: string
  req: string
  ntf: string
}

/** One row: a route, how to call it, and the status each credential gets (column order of CREDS). */
interface Row {
  method: string
  path: string
  body?: unknown
  expect: [number, number, number, number, number, number, number]
  /** Needs a resource of its own per call (the route deletes it). */
  fresh?: 'ep' | 'app' | 'key' | 'user' | 'req'
}

const A_ONLY_OK = (ok: number): Row['expect'] => [ok, 403, 403, 403, 403, 403, 401]
const READ = (ok = 200): Row['expect'] => [ok, ok, 403, ok, ok, ok, 401]
const APP_WRITE = (ok: number): Row['expect'] => [ok, 403, 403, ok, ok, 403, 401]
const OPERATOR_READ: Row['expect'] = [200, 200, 403, 403, 403, 403, 401]

const ROWS: Row[] = [
  { method: 'POST', path: '/v1/apps', body: { name: 'n' }, expect: A_ONLY_OK(201) },
  { method: 'GET', path: '/v1/apps', expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/apps/{app}', expect: OPERATOR_READ },
  { method: 'PATCH', path: '/v1/apps/{app}', body: { name: 'A' }, expect: A_ONLY_OK(200) },
  { method: 'POST', path: '/v1/apps/{app}/portal-tokens', body: {}, expect: A_ONLY_OK(201) },
  { method: 'DELETE', path: '/v1/apps/{fresh}', expect: A_ONLY_OK(200), fresh: 'app' },
  { method: 'POST', path: '/v1/keys', body: { role: 'viewer' }, expect: A_ONLY_OK(201) },
  { method: 'GET', path: '/v1/keys', expect: OPERATOR_READ },
  { method: 'DELETE', path: '/v1/keys/{fresh}', expect: A_ONLY_OK(200), fresh: 'key' },
  { method: 'POST', path: '/v1/endpoints', body: { url: '{rx}' }, expect: APP_WRITE(201) },
  { method: 'GET', path: '/v1/endpoints', expect: READ() },
  { method: 'GET', path: '/v1/endpoints/{ep}', expect: READ() },
  { method: 'PATCH', path: '/v1/endpoints/{ep}', body: { description: 'd' }, expect: APP_WRITE(200) },
  { method: 'DELETE', path: '/v1/endpoints/{fresh}', expect: APP_WRITE(200), fresh: 'ep' },
  { method: 'GET', path: '/v1/endpoints/{ep}/secret', expect: [200, 403, 403, 200, 200, 200, 401] },
  { method: 'POST', path: '/v1/endpoints/{ep}/secret/rotate', body: {}, expect: APP_WRITE(200) },
  { method: 'POST', path: '/v1/endpoints/{ep}/enable', expect: APP_WRITE(200) },
  { method: 'POST', path: '/v1/endpoints/{ep}/recover', body: { since: '2020-01-01T00:00:00Z' }, expect: APP_WRITE(202) },
  { method: 'POST', path: '/v1/endpoints/{ep}/test', expect: APP_WRITE(202) },
  // Pull routes (docs/pull-endpoints.md): consumer and admin keys; {ep} is a push endpoint, so 409.
  { method: 'POST', path: '/v1/endpoints/{ep}/claim', body: {}, expect: [409, 403, 403, 409, 403, 403, 401] },
  { method: 'POST', path: '/v1/endpoints/{ep}/ack', body: { items: [{ delivery_id: 'dlv_x', claim_token: 't' }] }, expect: [409, 403, 403, 409, 403, 403, 401] },
  { method: 'POST', path: '/v1/endpoints/{ep}/nack', body: { items: [{ delivery_id: 'dlv_x', claim_token: 't' }] }, expect: [409, 403, 403, 409, 403, 403, 401] },
  { method: 'POST', path: '/v1/endpoints/{ep}/release', body: { items: [{ delivery_id: 'dlv_x', claim_token: 't' }] }, expect: [409, 403, 403, 409, 403, 403, 401] },
  { method: 'POST', path: '/v1/events', body: { type: 'x.y', data: {} }, expect: [202, 403, 202, 202, 403, 403, 401] },
  { method: 'POST', path: '/v1/events/batch', body: { events: [{ type: 'x.y', data: {} }] }, expect: [202, 403, 202, 202, 403, 403, 401] },
  { method: 'GET', path: '/v1/events', expect: READ() },
  { method: 'GET', path: '/v1/events/{evt}', expect: READ() },
  { method: 'GET', path: '/v1/deliveries', expect: READ() },
  { method: 'GET', path: '/v1/deliveries/{dlv}', expect: READ() },
  // The dispatcher is not running: the delivery is pending, so a permitted redeliver is 409 not_eligible.
  { method: 'POST', path: '/v1/deliveries/{dlv}/redeliver', expect: APP_WRITE(409) },
  { method: 'PUT', path: '/v1/event-types/t.x', body: {}, expect: A_ONLY_OK(200) },
  { method: 'GET', path: '/v1/event-types', expect: READ() },
  { method: 'GET', path: '/v1/event-types/t.x', expect: [200, 200, 403, 200, 403, 403, 401] },
  { method: 'GET', path: '/metrics', expect: OPERATOR_READ },
  { method: 'POST', path: '/v1/notifications', body: { topic: 't', recipients: ['user:u1'] }, expect: [202, 403, 202, 403, 403, 403, 401] },
  { method: 'PUT', path: '/v1/users/{fresh}', body: {}, expect: A_ONLY_OK(201), fresh: 'user' },
  { method: 'GET', path: '/v1/templates', expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/keys/self', expect: [200, 200, 200, 200, 403, 403, 401] },
  { method: 'GET', path: '/v1/stats', expect: [200, 200, 403, 200, 403, 403, 401] },
  { method: 'GET', path: '/v1/stats/timeseries', expect: [200, 200, 403, 200, 403, 403, 401] },
  { method: 'GET', path: '/v1/stats/timeseries?endpoint_id={ep}', expect: [200, 200, 403, 200, 403, 403, 401] },
  { method: 'POST', path: '/v1/requests', body: { url: '{rx}', delay: '1h' }, expect: [202, 403, 202, 202, 403, 403, 401] },
  { method: 'GET', path: '/v1/requests', expect: [200, 200, 200, 200, 403, 403, 401] },
  { method: 'GET', path: '/v1/requests/{req}', expect: [200, 200, 200, 200, 403, 403, 401] },
  // Pending (delayed): a permitted redeliver is 409 not_eligible.
  { method: 'POST', path: '/v1/requests/{req}/redeliver', expect: [409, 403, 403, 409, 403, 403, 401] },
  { method: 'DELETE', path: '/v1/requests/{fresh}', expect: [200, 403, 200, 200, 403, 403, 401], fresh: 'req' },
  { method: 'GET', path: '/v1/notifications', expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/notifications/{ntf}', expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/users', expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/users/u1', expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/users/u1/preferences', expect: OPERATOR_READ },
  { method: 'POST', path: '/v1/users/u1/tokens', body: {}, expect: A_ONLY_OK(201) },
  { method: 'DELETE', path: '/v1/users/{fresh}', expect: A_ONLY_OK(200), fresh: 'user' },
  { method: 'GET', path: '/v1/subscriptions?topic=t', expect: OPERATOR_READ },
  { method: 'PUT', path: '/v1/subscriptions', body: { topic: 't', principal: 'user:u1' }, expect: A_ONLY_OK(200) },
  { method: 'DELETE', path: '/v1/subscriptions', body: { topic: 't', principal: 'user:u1' }, expect: A_ONLY_OK(200) },
  { method: 'PUT', path: '/v1/preferences', body: { user_id: 'u1', topic: 't', channel: 'email', enabled: true }, expect: A_ONLY_OK(200) },
  { method: 'PUT', path: '/v1/templates', body: { topic: 't', channel: 'inbox', body: 'b' }, expect: A_ONLY_OK(201) },
  { method: 'POST', path: '/v1/templates/preview', body: { topic: 't', channel: 'inbox' }, expect: OPERATOR_READ },
  { method: 'GET', path: '/v1/inbox', expect: [401, 401, 401, 401, 401, 401, 200] },
]

describe('every route × every credential kind (docs/applications.md)', () => {
  let f: ApiFixture
  let rx: Receiver
  const creds = {} as Record<Cred, string>
  let A: Ids
  let B: Ids
  const UNKNOWN: Ids = {
    app: 'no-such-app',
    ep: 'ep_00000000000000000000000000',
    evt: 'evt_00000000000000000000000000',
    dlv: 'dlv_00000000000000000000000000',
    req: 'req_00000000000000000000000000',
    ntf: 'ntf_00000000000000000000000000',
  }

  const seed = async (app: string): Promise<Ids> => {
    await f.json('POST', '/v1/apps', { body: { id: app, name: app } })
    const ep = await f.json('POST', '/v1/endpoints', { body: { url: rx.url, app_id: app } })
    const ev = await f.json('POST', '/v1/events', { body: { type: 'x.y', data: {}, app_id: app } })
    const d = await f.json('GET', `/v1/deliveries?app_id=${app}`)
    const req = await f.json('POST', '/v1/requests', { body: { url: rx.url, delay: '1h', app_id: app } })
    const ntf = await f.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['user:u1'], app_id: app } })
    return { app, ep: ep.body.id, evt: ev.body.id, dlv: d.body.data[0].id, req: req.body.id, ntf: ntf.body.id }
  }

  const fresh = async (kind: NonNullable<Row['fresh']>, app: string, method: string): Promise<string> => {
    if (kind === 'ep') return (await f.json('POST', '/v1/endpoints', { body: { url: rx.url, app_id: app } })).body.id
    if (kind === 'user') {
      const id = `u-${Math.random().toString(36).slice(2)}`
      if (method === 'DELETE') await f.json('PUT', `/v1/users/${id}`, { body: {} })
      return id
    }
    if (kind === 'req') return (await f.json('POST', '/v1/requests', { body: { url: rx.url, delay: '1h', app_id: app } })).body.id
    if (kind === 'app') return (await f.json('POST', '/v1/apps', { body: { name: 'tmp' } })).body.id
    return (await f.json('POST', '/v1/keys', { body: { role: 'viewer' } })).body.id
  }

  const call = async (row: Row, cred: Cred, ids: Ids, app: string): Promise<number> => {
    let path = row.path.replace('{app}', ids.app).replace('{ep}', ids.ep).replace('{evt}', ids.evt).replace('{dlv}', ids.dlv).replace('{req}', ids.req).replace('{ntf}', ids.ntf)
    const unknownFresh = row.fresh === 'ep' ? UNKNOWN.ep : row.fresh === 'req' ? UNKNOWN.req : 'unknown'
    if (row.fresh) path = path.replace('{fresh}', ids === UNKNOWN ? unknownFresh : await fresh(row.fresh, app, row.method))
    const body = row.body === undefined ? undefined : JSON.parse(JSON.stringify(row.body).replace('{rx}', rx.url))
    return (await f.json(row.method, path, { key: creds[cred], ...(body !== undefined ? { body } : {}) })).status
  }

  beforeAll(async () => {
    f = await apiFixture()
    rx = await startReceiver()
    A = await seed('app-a')
    B = await seed('app-b')
    creds.admin = f.keys.admin
    creds.viewer = f.keys.viewer
    creds.publisher = f.keys.publisher
    creds.scopedA = (await f.json('POST', '/v1/keys', { body: { role: 'admin', app_id: 'app-a' } })).body.key
    creds.portalA = (await f.json('POST', '/v1/apps/app-a/portal-tokens', { body: {} })).body.token
    creds.readOnlyA = (await f.json('POST', '/v1/apps/app-a/portal-tokens', { body: { read_only: true } })).body.token
    creds.user = (await f.json('POST', '/v1/users/u1/tokens', { body: {} })).body.token
    await f.json('PUT', '/v1/event-types/t.x', { body: {} })
    await f.json('PUT', '/v1/users/u1', { body: {} })
  })
  afterAll(async () => {
    await f.close()
    await rx.close()
  })

  it('answers each credential as the table says', async () => {
    const got: string[] = []
    const want: string[] = []
    for (const row of ROWS) {
      for (const [n, cred] of CREDS.entries()) {
        got.push(`${row.method} ${row.path} ${cred} → ${await call(row, cred, A, A.app)}`)
        want.push(`${row.method} ${row.path} ${cred} → ${row.expect[n]}`)
      }
    }
    expect(got).toEqual(want)
  })

  it("app B's ids are 404 for every A-scoped credential, exactly like ids that do not exist", async () => {
    const byId = ROWS.filter((r) => /\{(ep|evt|dlv|req|ntf)\}/.test(r.path) || r.fresh === 'ep' || r.fresh === 'req')
    expect(byId.length).toBeGreaterThan(10)
    const got: string[] = []
    const want: string[] = []
    for (const row of byId) {
      for (const cred of ['scopedA', 'portalA', 'readOnlyA'] as const) {
        const allowed = row.expect[CREDS.indexOf(cred)] !== 403
        const other = await call(row, cred, B, B.app)
        const unknown = await call(row, cred, UNKNOWN, B.app)
        got.push(`${row.method} ${row.path} ${cred} → ${other} / ${unknown}`)
        const expected = allowed ? 404 : 403
        want.push(`${row.method} ${row.path} ${cred} → ${expected} / ${expected}`)
      }
    }
    for (const path of ['/v1/endpoints', '/v1/events', '/v1/deliveries', '/v1/requests', '/v1/stats', '/v1/stats/timeseries']) {
      for (const cred of ['scopedA', 'portalA', 'readOnlyA'] as const) {
        // Portal tokens have no request or stats routes at all.
        const expected = cred !== 'scopedA' && /^\/v1\/(requests|stats)/.test(path) ? 403 : 404
        got.push(`${path}?app_id=B ${cred} → ${(await f.json('GET', `${path}?app_id=${B.app}`, { key: creds[cred] })).status}`)
        want.push(`${path}?app_id=B ${cred} → ${expected}`)
      }
    }
    expect(got).toEqual(want)
  })

  it('lists every /v1 route of the OpenAPI document (a new route needs its row)', async () => {
    const doc = (await f.json('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> }
    const norm = (path: string): string => path.replace(/\?.*$/, '').replace(/\{[^}]+\}|\/u1|\/t\.x|\/app-a/g, '/{}').replace(/\/\/\{\}/g, '/{}')
    const covered = new Set(ROWS.map((r) => `${r.method} ${norm(r.path)}`))
    const missing: string[] = []
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!path.startsWith('/v1/') || path.startsWith('/v1/inbox/')) continue
      for (const m of Object.keys(ops)) if (!covered.has(`${m.toUpperCase()} ${norm(path)}`)) missing.push(`${m.toUpperCase()} ${path}`)
    }
    expect(missing).toEqual([])
  })

  it('A-scoped lists show only A', async () => {
    for (const cred of ['scopedA', 'portalA', 'readOnlyA'] as const) {
      for (const path of ['/v1/endpoints', '/v1/events', '/v1/deliveries']) {
        const r = await f.json('GET', path, { key: creds[cred] })
        expect(r.status).toBe(200)
        expect(r.body.data.length).toBeGreaterThan(0)
        expect(new Set(r.body.data.map((x: { app_id: string }) => x.app_id))).toEqual(new Set(['app-a']))
      }
    }
  })
})
