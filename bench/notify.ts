/**
 * Notify benchmark.
 * 1. Fan-out: one notification to a role of 1,000 users on the inbox channel, timed from
 *    `send()` until all 1,000 inbox rows are committed, 40 sends after 3 that are not counted (a
 *    fresh process's first send compiles the pipeline, as the webhook suite's warm-up loop does).
 *    The accept transaction writes them (pipeline.ts), so that is when `send()` returns; the
 *    bench checks the 1,000 rows exist. The
 *    dispatcher and the background checkpointer run as in the server (`Postbox.start`), with the
 *    metrics observer counting the inbox deliveries.
 *    Also: the dispatcher path the inbox sender still serves (redeliver, rows enqueued pending by
 *    older versions): 1,000 pending inbox rows, from their commit until the sender wrote all.
 *    Baseline: a bare INSERT of 1,000 inbox rows in one transaction, same pragmas.
 * 2. Inbox read: list (first page of 50) + exact unread count for a user with 10,000
 *    messages. Baseline: the same page query prepared by hand plus a naive count(*) of unread.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { newId } from '../src/lib/ids.js'
import { silentLogger } from '../src/log.js'
import { createMetrics } from '../src/metrics.js'
import { openStore } from '../src/store/index.js'
import { startCheckpointer } from '../src/store/sqlite/checkpointer.js'
import { openDatabase } from '../src/store/sqlite/db.js'
import type { Channel } from '../src/store/deliveries.js'
import type { ChannelResult, ChannelSender } from '../src/delivery/channel.js'
import { createDeliveryStack } from '../src/engine.js'
import { createWebhookService } from '../src/webhooks/service.js'
import { createNotifyService } from '../src/notify/service.js'
import type { Figure } from './figures.js'

const USERS = 1_000
const FANOUT_RUNS = 40
/** Sends before the measured ones: the first compiles the pipeline's code (~100 ms, then ~40 ms twice). */
const FANOUT_WARMUP = 3
const SENDER_RUNS = 5
const MESSAGES = 10_000
const READ_RUNS = 2_000

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return { median: s[Math.floor(s.length / 2)]!, p95: s[Math.floor(s.length * 0.95)]! }
}
const ms = (x: number) => `${x.toFixed(2)} ms`

interface FanoutFigures {
  total: number[]
  cpu: number[]
  /** The dispatcher path: pending inbox rows, commit until the sender wrote them all. */
  sender: number[]
}

async function fanout(dir: string): Promise<FanoutFigures> {
  const store = openStore(join(dir, 'fanout.db'))
  const config = testConfig({ dataDir: dir })
  const log = silentLogger()
  const metrics = createMetrics(store, systemClock)
  const notify = createNotifyService({
    store, config, clock: systemClock, rng: Math.random, log, tokenKey: 'k', publishEvent: async () => {}, observer: metrics,
  })
  await store.tx(async (s) => {
    for (let i = 0; i < USERS; i++) await s.directory.putUser(`u${i}`, { roles: ['everyone'] }, Date.now())
  })
  let done = 0
  let target = 0
  let finished: (() => void) | null = null
  const counting: ChannelSender = {
    timeoutMs: notify.channels.inbox.timeoutMs,
    async send(d, signal): Promise<ChannelResult> {
      const r = await notify.channels.inbox.send(d, signal)
      if (++done === target) finished?.()
      return r
    },
  }
  // The engine's own wiring (src/engine.ts), with a counting wrapper over the inbox channel.
  const deps = { store, config, clock: systemClock, rng: Math.random, log }
  const stack = createDeliveryStack({ ...deps, webhooks: createWebhookService(deps), notify, observer: metrics, channels: new Map<Channel, ChannelSender>([['inbox', counting]]) })
  const dispatcher = stack.dispatcher
  // As in the server (Postbox.start): WAL checkpoints run on a background connection.
  const checkpointer = startCheckpointer(store.sqlite!, log)
  dispatcher.start()
  const check = openDatabase(store.path, { readonly: true })
  const messagesOf = check.prepare(`SELECT count(*) FROM inbox_messages WHERE notification_id = ?`).pluck()
  const times: number[] = []
  const cpu: number[] = []
  for (let run = -FANOUT_WARMUP; run < FANOUT_RUNS; run++) {
    const c = process.cpuUsage()
    const t = performance.now()
    const sent = await notify.notifications.send({ topic: 'bench.fanout', recipients: ['role:everyone'], title: `run ${run}` })
    const took = performance.now() - t
    const used = process.cpuUsage(c)
    if (run >= 0) {
      times.push(took)
      cpu.push((used.user + used.system) / 1000)
    }
    if (messagesOf.get(sent.id) !== USERS) throw new Error(`run ${run}: ${String(messagesOf.get(sent.id))} inbox rows`)
    await new Promise((r) => setTimeout(r, 20))
  }
  const sender: number[] = []
  for (let run = 0; run < SENDER_RUNS; run++) {
    done = 0
    target = USERS
    const all = new Promise<void>((resolve) => (finished = resolve))
    const ntf = newId('ntf')
    await store.tx(async (s) => {
      const now = Date.now()
      for (let i = 0; i < USERS; i++) {
        await s.deliveries.enqueue(
          { channel: 'inbox', notificationId: ntf, recipient: `u${i}`, eventType: 'bench.sender', payload: `{"title":"pending ${run}"}`, maxAttempts: 6, nextAttemptAt: now },
          now,
        )
      }
    })
    const t = performance.now()
    await all
    sender.push(performance.now() - t)
    if (messagesOf.get(ntf) !== USERS) throw new Error(`sender run ${run}: ${String(messagesOf.get(ntf))} inbox rows`)
    await new Promise((r) => setTimeout(r, 20)) // let the last settle commit
  }
  check.close()
  await stack.stop(1000)
  await checkpointer.stop()
  notify.close()
  await store.close()
  return { total: times, cpu, sender }
}

function bareInsert(dir: string): number[] {
  const db = openDatabase(join(dir, 'bare.db'))
  const insert = db.prepare(`INSERT INTO inbox_messages (id, user_id, notification_id, delivery_id, topic, title, body, severity, created_at)
    VALUES (?, ?, 'ntf_x', ?, 'bench.fanout', 'title', '', 'info', ?)`)
  const many = db.transaction((run: number) => {
    for (let i = 0; i < USERS; i++) insert.run(`msg_${run}_${i}`, `u${i}`, `dlv_${run}_${i}`, Date.now())
  })
  const times: number[] = []
  for (let run = 0; run < FANOUT_RUNS; run++) {
    const t = performance.now()
    many.immediate(run)
    times.push(performance.now() - t)
  }
  db.close()
  return times
}

async function inboxRead(dir: string): Promise<{ ours: number[]; raw: number[] }> {
  const store = openStore(join(dir, 'read.db'))
  const now = Date.now()
  await store.tx(async (s) => {
    for (let i = 0; i < MESSAGES; i++) {
      await s.inbox.insertMessage(
        { userId: 'heavy', notificationId: null, deliveryId: `d${i}`, topic: i % 3 ? 'a' : 'b', title: `m${i}`, body: 'x', severity: 'info', actionUrl: null, payload: null },
        now + i,
      )
    }
    for (let i = 0; i < 500; i++) await s.inbox.insertMessage({ userId: 'other', notificationId: null, deliveryId: `o${i}`, topic: 'a', title: 'o', body: '', severity: 'info', actionUrl: null, payload: null }, now)
  })
  const read = (await store.inbox.list('heavy', { status: 'all', archived: false, limit: 5000 })).data.slice(0, 4000).map((m) => m.id)
  await store.inbox.changeState('heavy', null, read, 'read', now)
  const notify = createNotifyService({ store, config: testConfig({ dataDir: dir }), clock: systemClock, rng: Math.random, log: silentLogger(), tokenKey: 'k', publishEvent: async () => {} })
  const inbox = notify.inbox('heavy')
  const ours: number[] = []
  for (let i = 0; i < READ_RUNS; i++) {
    const t = performance.now()
    const page = await inbox.list({ limit: 50 })
    const n = await inbox.unreadCount()
    ours.push(performance.now() - t)
    if (page.data.length !== 50 || n !== 6000 || page.unread_count !== 6000) throw new Error(`unexpected page ${page.data.length} / ${n}`)
  }
  const db = openDatabase(store.path, { readonly: true })
  const pageSql = db.prepare(`SELECT * FROM inbox_messages WHERE user_id = ? AND archived = 0 ORDER BY rowid DESC LIMIT 51`)
  const countSql = db.prepare(`SELECT count(*) FROM inbox_messages WHERE user_id = ? AND archived = 0 AND read = 0`).pluck()
  const raw: number[] = []
  for (let i = 0; i < READ_RUNS; i++) {
    const t = performance.now()
    pageSql.all('heavy')
    countSql.get('heavy')
    raw.push(performance.now() - t)
  }
  db.close()
  notify.close()
  await store.close()
  return { ours, raw }
}

/** Runs the notify benchmarks and prints their figures with the baselines and ratios. */
export async function run(): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-notify-'))
  try {
    const f = await fanout(dir)
    const fan = stats(f.total)
    const cpu = stats(f.cpu)
    const sender = stats(f.sender)
    const bare = stats(bareInsert(dir))
    console.log(`fan-out to a role of ${USERS} users (inbox), after ${FANOUT_WARMUP} warm-up sends: median ${ms(fan.median)}, p95 ${ms(fan.p95)} (target <= 50 ms)`)
    console.log(`  written by the accept transaction: send() returns once all ${USERS} inbox rows are committed`)
    console.log(`  CPU time of this process for it (user + system; independent of other load): median ${ms(cpu.median)}`)
    console.log(`  dispatcher path (${USERS} pending inbox rows: redeliver, older versions' rows), commit until written: median ${ms(sender.median)}`)
    console.log(`  baseline bare INSERT of ${USERS} inbox rows in one tx: median ${ms(bare.median)}; ratio ${(fan.median / bare.median).toFixed(1)}x`)
    const { ours, raw } = await inboxRead(dir)
    const o = stats(ours)
    const r = stats(raw)
    console.log(`inbox list (50) + unread count, user with ${MESSAGES} messages: median ${ms(o.median)}, p95 ${ms(o.p95)} (target <= 5 ms)`)
    console.log(`  baseline hand-written page query + naive count(*): median ${ms(r.median)}; ratio ${(o.median / r.median).toFixed(2)}x`)
    return [{ measure: `fan-out to ${USERS} inbox recipients, p95 (median) of ${FANOUT_RUNS} after ${FANOUT_WARMUP} warm-up sends`, value: `${ms(fan.p95)} (${ms(fan.median)}; CPU ${ms(cpu.median)})`, target: '<= 50 ms', met: fan.p95 <= 50 }]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
