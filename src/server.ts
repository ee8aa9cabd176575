import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import type { Config } from './config.js'
import { createLogger, type Log } from './log.js'
import { Postbox } from './postbox.js'

/** A listening Postbox HTTP server. */
export interface RunningServer {
  readonly postbox: Postbox
  readonly port: number
  readonly host: string
  /** Stops accepting connections, drains the dispatcher within the deadline, closes the database. */
  close(): Promise<void>
}

/** Serves `postbox.app` on config.port/config.host; resolves once listening (port 0 picks a free port). */
export async function listen(postbox: Postbox, log: Log): Promise<RunningServer> {
  const { port, host } = postbox.config
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: postbox.app.fetch, port, hostname: host }, () => resolve(s as Server)) as Server
    s.once('error', reject)
  })
  // Longer than common proxy idle timeouts, so pooled client connections are not cut mid-request.
  server.keepAliveTimeout = 65_000
  const actual = (server.address() as AddressInfo).port
  log.info({ port: actual, host, db: postbox.config.dbPath }, 'listening')
  let closing: Promise<void> | null = null
  return {
    postbox,
    port: actual,
    host,
    close() {
      closing ??= (async () => {
        // 1. Stop accepting and let API requests in progress finish (each is short: the
        //    group commit answers within a turn); long-lived SSE streams are cut after a grace.
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        const grace = Math.min(2_000, postbox.config.shutdownTimeoutMs)
        await Promise.race([stopped, new Promise((r) => setTimeout(r, grace).unref())])
        server.closeAllConnections()
        // 2. Drain the dispatcher, release unsent claims, checkpoint and close the database.
        await postbox.close()
        await stopped
      })()
      return closing
    },
  }
}

/**
 * `postbox serve`: opens the Postbox, starts delivering, listens, and on SIGTERM/SIGINT drains
 * within config.shutdownTimeoutMs and exits 0 (1 if the drain itself failed).
 */
export async function runServer(config: Config, log: Log = createLogger(config.logLevel)): Promise<RunningServer> {
  const postbox = await Postbox.open({ config, log, processMetrics: true })
  postbox.start()
  let running: RunningServer
  try {
    running = await listen(postbox, log)
  } catch (err) {
    await postbox.close()
    throw err
  }
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    log.info({ signal, deadlineMs: config.shutdownTimeoutMs }, 'shutting down')
    // A last resort if draining hangs: the deadline plus a margin for the checkpoint.
    const hard = setTimeout(() => {
      log.error('shutdown deadline exceeded; exiting')
      process.exit(1)
    }, config.shutdownTimeoutMs + 5_000)
    hard.unref()
    running
      .close()
      .then(() => {
        log.info('stopped')
        log.flush?.()
        process.exit(0)
      })
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed')
        process.exit(1)
      })
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
  return running
}
