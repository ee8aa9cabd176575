/**
 * Inbox benchmark (docs/notifications.md).
 * 1. GET /v1/inbox (first page of 50) + GET /v1/inbox/counts?tags=<5 tags> for a user with
 *    10,000 messages over 5 tags and 2 apps, through the HTTP app (in process, no socket).
 *    Baseline: the same page query by hand plus a naive count(*) per tag over the messages.
 *    Also a tab: GET /v1/inbox?tags=<one tag>.
 * 2. POST /v1/inbox/read-all {tags: [one tag]} over a user's 10,000 unread messages (half of them tagged).
 * 3. Fan-out with receipts: one notification to 1,000 users on the inbox, with tags and an app,
 *    where 100 of them muted the topic (100 suppressions recorded at accept). Baseline: a bare
 *    INSERT of 1,000 inbox rows in one transaction.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/index.js'
import { openDatabase } from '../src/store/sqlite/db.js'
import { createApp } from '../src/api/app.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { createNotifyService, type NotifyService } from '../src/notify/service.js'

const MESSAGES = 10_000
const TAGS = ['billing', 'social', 'ops', 'security', 'product']
const READ_RUNS = 500
const READ_ALL_RUNS = 3
const USERS = 1_000
const FANOUT_RUNS = 15

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return { median: s[Math.floor(s.length / 2)]!, p95: s[Math.floor(s.length * 0.95)]! }
}
const ms = (x: number) => `${x.toFixed(2)} ms`

function service(store: Store, dir: string): NotifyService {
  return createNotifyService({ store, config: testConfig({ dataDir: dir }), clock: systemClock, rng: Math.random, log: silentLogger(), tokenKey: 'k'.repeat(32), publishEvent: async () => {} })
}

/** 10,000 messages for `userId`: each with one or two of the 5 tags, two topics, two apps. */
async function fill(store: Store, userId: string, tagged: (i: number) => string[]): Promise<void> {
  const now = Date.now()
  await store.tx(async (s) => {
    const batch = []
    for (let i = 0; i < MESSAGES; i++) {
      batch.push({
        userId, appId: i % 4 === 0 ? 'a1' : 'default', notificationId: null, deliveryId: `${userId}-${i}`, topic: i % 3 ? 'a' : 'b',
        title: `m${i}`, body: 'x', severity: 'info', actionUrl: null, payload: null, tags: tagged(i),
      })
    }
    await s.inbox.insertMessages(batch, now)
  })
}

async function reads(dir: string) {
  const store = openStore(join(dir, 'read.db'))
  const notify = service(store, dir)
  await fill(store, 'heavy', (i) => (i % 7 === 0 ? [TAGS[i % 5]!, TAGS[(i + 1) % 5]!] : [TAGS[i % 5]!]))
  const first = (await notify.inbox('heavy').list({ limit: 200 })).data.map((m) => m.id)
  await notify.inbox('heavy').read(first.slice(0, 100))
  const app = createApp({ store, config: testConfig({ dataDir: dir }), log: silentLogger(), clock: systemClock, webhooks: {} as WebhookService, notify })
  const token = (await notify.tokens.issue('heavy')).token
  const headers = { authorization: `Bearer ${token}` }
  const get = async (path: string) => {
    const res = await app.request(path, { headers })
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`)
    return (await res.json()) as Record<string, unknown>
  }
  const ours: number[] = []
  const tab: number[] = []
  const c0 = process.cpuUsage()
  for (let i = 0; i < READ_RUNS; i++) {
    const t = performance.now()
    const page = await get('/v1/inbox?limit=50')
    const counts = await get(`/v1/inbox/counts?tags=${TAGS.join(',')}`)
    ours.push(performance.now() - t)
    if ((page.data as unknown[]).length !== 50 || counts.total !== MESSAGES) throw new Error('unexpected page or counts')
    const t2 = performance.now()
    await get('/v1/inbox?limit=50&tags=ops')
    tab.push(performance.now() - t2)
  }
  const used = process.cpuUsage(c0)
  // CPU per iteration of both loops' work (the tab list included), independent of other load.
  const cpuPerRead = (used.user + used.system) / 1000 / READ_RUNS
  const db = openDatabase(store.path, { readonly: true })
  const pageSql = db.prepare(`SELECT * FROM inbox_messages WHERE user_id = ? AND archived = 0 AND snoozed_until IS NULL ORDER BY rowid DESC LIMIT 51`)
  const countSql = db.prepare(`SELECT count(*), sum(read = 0), sum(seen = 0) FROM inbox_messages WHERE user_id = ? AND archived = 0
    AND (? IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?))`)
  const raw: number[] = []
  for (let i = 0; i < READ_RUNS / 5; i++) {
    const t = performance.now()
    pageSql.all('heavy')
    countSql.get('heavy', null, null)
    for (const tag of TAGS) countSql.get('heavy', tag, tag)
    raw.push(performance.now() - t)
  }
  db.close()

  const readAll: number[] = []
  for (let run = 0; run < READ_ALL_RUNS; run++) {
    await fill(store, `bulk${run}`, (i) => (i % 2 ? ['billing'] : ['social']))
    const inbox = notify.inbox(`bulk${run}`)
    const t = performance.now()
    const r = await inbox.readAll({ tags: ['billing'] })
    readAll.push(performance.now() - t)
    if (r.updated !== MESSAGES / 2) throw new Error(`read-all updated ${r.updated}`)
  }
  notify.close()
  await store.close()
  return { ours, tab, raw, readAll, cpuPerRead }
}

async function fanout(dir: string) {
  const store = openStore(join(dir, 'fanout.db'))
  const notify = service(store, dir)
  await store.apps.insert({ id: 'a1', name: 'a1', metadata: {} }, Date.now())
  await store.tx(async (s) => {
    for (let i = 0; i < USERS; i++) await s.directory.putUser(`u${i}`, { roles: ['everyone'] }, Date.now())
    for (let i = 0; i < USERS; i += 10) {
      await s.directory.putPreference({ userId: `u${i}`, topic: 'bench.fanout', channel: 'inbox', enabled: false, digest: 'none', quietHours: null, updatedAt: Date.now() })
    }
  })
  const times: number[] = []
  const cpu: number[] = []
  const view: number[] = []
  for (let run = 0; run < FANOUT_RUNS; run++) {
    const c = process.cpuUsage()
    const t = performance.now()
    const sent = await notify.notifications.send({ topic: 'bench.fanout', recipients: ['role:everyone'], title: `run ${run}`, tags: ['ops', 'deploy'], app_id: 'a1' })
    times.push(performance.now() - t)
    const used = process.cpuUsage(c)
    cpu.push((used.user + used.system) / 1000)
    if (sent.deliveries !== USERS - USERS / 10) throw new Error(`run ${run}: ${sent.deliveries} deliveries`)
    const t2 = performance.now()
    const n = await notify.notifications.get(sent.id)
    view.push(performance.now() - t2)
    if (n.receipts.filter((r) => r.status === 'suppressed').length !== USERS / 10) throw new Error('suppressions missing')
  }
  notify.close()
  await store.close()
  const db = openDatabase(join(dir, 'bare.db'))
  const insert = db.prepare(`INSERT INTO inbox_messages (id, user_id, notification_id, delivery_id, topic, title, body, severity, created_at)
    VALUES (?, ?, 'ntf_x', ?, 'bench.fanout', 'title', '', 'info', ?)`)
  const many = db.transaction((run: number) => {
    for (let i = 0; i < USERS; i++) insert.run(`msg_${run}_${i}`, `u${i}`, `dlv_${run}_${i}`, Date.now())
  })
  const bare: number[] = []
  for (let run = 0; run < FANOUT_RUNS; run++) {
    const t = performance.now()
    many.immediate(run)
    bare.push(performance.now() - t)
  }
  db.close()
  return { times, cpu, view, bare }
}

/** Runs the inbox benchmarks and prints their figures with the baselines and ratios. */
export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-inbox-'))
  try {
    const r = await reads(dir)
    const o = stats(r.ours)
    const raw = stats(r.raw)
    console.log(`GET /v1/inbox (50) + GET /v1/inbox/counts (5 tags), user with ${MESSAGES} messages: median ${ms(o.median)}, p95 ${ms(o.p95)} (target <= 5 ms)`)
    console.log(`  baseline hand-written page query + naive count(*) per tag: median ${ms(raw.median)}; ratio ${(o.median / raw.median).toFixed(2)}x`)
    const tab = stats(r.tab)
    console.log(`  CPU time of this process per list + counts + tab list (independent of other load): ${ms(r.cpuPerRead)}`)
    console.log(`  a tab, GET /v1/inbox?tags=ops (50): median ${ms(tab.median)}, p95 ${ms(tab.p95)}`)
    const ra = stats(r.readAll)
    console.log(`POST /v1/inbox/read-all {tags} over ${MESSAGES} messages (${MESSAGES / 2} match): median ${ms(ra.median)} of ${READ_ALL_RUNS} runs`)
    const f = await fanout(dir)
    const fan = stats(f.times)
    const bare = stats(f.bare)
    const view = stats(f.view)
    console.log(`fan-out with receipts to ${USERS} users (inbox, 2 tags, ${USERS / 10} suppressed): median ${ms(fan.median)}, p95 ${ms(fan.p95)} (target <= 50 ms)`)
    console.log(`  CPU time of this process for it (user + system): median ${ms(stats(f.cpu).median)}`)
    console.log(`  baseline bare INSERT of ${USERS} inbox rows in one tx: median ${ms(bare.median)}; ratio ${(fan.median / bare.median).toFixed(1)}x`)
    console.log(`  GET /v1/notifications/:id (1,000 receipts): median ${ms(view.median)}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
