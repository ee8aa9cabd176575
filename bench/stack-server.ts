/**
 * The startup suite's memory baseline: the libraries Postbox's idle server is built on and no
 * Postbox code. better-sqlite3 opens a WAL file in POSTBOX_DATA_DIR, an `OpenAPIHono` app served
 * by `@hono/node-server` on POSTBOX_PORT answers `/healthz` with one query, and pino is
 * created. Spawned by bench/startup.ts as the server is, so the two idle RSS figures compare.
 */
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { OpenAPIHono } from '@hono/zod-openapi'
import Database from 'better-sqlite3'
import { pino } from 'pino'

const db = new Database(join(process.env.POSTBOX_DATA_DIR ?? '.', 'stack.db'))
db.pragma('journal_mode = WAL')
db.pragma('synchronous = NORMAL')
const ping = db.prepare('SELECT 1').pluck()
const log = pino({ level: process.env.POSTBOX_LOG_LEVEL ?? 'info' })
const app = new OpenAPIHono()
app.get('/healthz', (c) => c.json({ status: ping.get() === 1 ? 'ok' : 'down' }))
serve({ fetch: app.fetch, port: Number(process.env.POSTBOX_PORT ?? 8080), hostname: '127.0.0.1' }, (info) => log.info({ port: info.port }, 'listening'))
process.on('SIGTERM', () => process.exit(0))
