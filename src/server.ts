import type { AddressInfo } from 'node:net'
import { createServer, maxHeaderSize, STATUS_CODES, type Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { getRequestListener } from '@hono/node-server'
import { adapterErrorResponse } from './api/app.js'
import { ConfigError, type Config } from './config.js'
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
    // getRequestListener rather than serve(): only it passes an errorHandler to the adapter, so a
    // request it cannot turn into a URL (`GET *`) gets the JSON error shape too.
    const listener = getRequestListener(postbox.app.fetch, { hostname: host, errorHandler: adapterErrorResponse })
    // requireHostHeader: false, so an HTTP/1.1 request without Host reaches this listener and
    // gets the error JSON (Node's own refusal has an empty body).
    const s = createServer({ requireHostHeader: false }, (req, res) => {
      if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
        const body = JSON.stringify({ error: { code: 'bad_request', message: 'Malformed HTTP request: an HTTP/1.1 request needs a Host header' } })
        res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' })
        res.end(body)
        return
      }
      void listener(req, res)
    })
    s.once('error', (err) => reject(listenError(err, host, port)))
    s.listen(port, host, () => resolve(s))
  })
  server.on('clientError', answerClientError)
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
        //    group commit answers within a turn); live inbox streams end first, and anything still
        //    open is cut after a grace.
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
        // Live inbox streams end cleanly now instead of holding the grace below.
        postbox.endStreams()
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

/** Listen failures the operator fixes in the configuration, as a ConfigError (exit 2) naming the setting. */
export function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as { code?: unknown } | null)?.code
  const where = `${host}:${port}`
  if (code === 'EADDRINUSE') return new ConfigError('POSTBOX_PORT', `cannot listen on ${where}: the port is already in use`)
  if (code === 'EACCES') return new ConfigError('POSTBOX_PORT', `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`)
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') {
    return new ConfigError('POSTBOX_HOST', `cannot listen on ${where}: the host name "${host}" does not resolve`)
  }
  if (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT' || code === 'EINVAL') {
    return new ConfigError('POSTBOX_HOST', `cannot listen on ${where}: "${host}" is not an address of this machine (${String(code)})`)
  }
  return err
}

/** How long a connection refused by the HTTP parser may linger after its answer, for the client to read it. */
const CLIENT_ERROR_LINGER_MS = 2_000

/** The parts of Node's in-progress ServerResponse (`socket._httpMessage`) this module looks at. */
interface PendingResponse {
  headersSent: boolean
  req?: { complete?: boolean }
  once(event: 'finish' | 'close', fn: () => void): unknown
}

/**
 * Answers requests Node's HTTP parser refuses before any route sees them (oversized request
 * line or headers, malformed syntax, broken chunk framing, header timeout) with the documented
 * error JSON instead of Node's empty-bodied default, then closes the connection.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (socket.writableEnded) return // already answered
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const current = (socket as { _httpMessage?: PendingResponse | null })._httpMessage
  // A pipelined request after a complete one: its answer goes out first, then ours.
  if (current?.req?.complete) current.once('finish', () => answerClientError(err, socket))
  // The body of the request being answered broke after its response started: nothing can follow.
  else if (current?.headersSent) socket.destroy()
  // Otherwise ours replaces the response not yet started (as Node's default does).
  else writeClientError(err, socket)
}

/**
 * Writes the error JSON and ends the connection. The rest of the request is read and dropped
 * until the client closes (at most CLIENT_ERROR_LINGER_MS): closing a socket with unread input
 * sends a TCP reset, which can destroy the answer before the client reads it.
 */
function writeClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (socket.writableEnded || !socket.writable) return
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', `Request line and headers exceed ${maxHeaderSize} bytes`]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request was not received in time']
        : [400, 'bad_request', 'Malformed HTTP request']
  const body = JSON.stringify({ error: { code, message } })
  const head = [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, 'content-type: application/json', `content-length: ${Buffer.byteLength(body)}`, 'connection: close']
  socket.on('error', () => socket.destroy())
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`)
  socket.resume()
  const linger = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS)
  linger.unref()
  socket.once('close', () => clearTimeout(linger))
}

/**
 * Signals this soon after the first are copies of it, ignored. Ctrl-C in a terminal signals the
 * whole foreground group, npm and node alike, and npm forwards its own to node: node sees two
 * SIGINTs within milliseconds, and taking the second as "force" abandoned every drain under
 * `npm start`. A second signal after this long is the operator's, and forces an exit.
 */
export const SIGNAL_COPY_WINDOW_MS = 2_000

/**
 * `postbox serve`: opens the Postbox, starts delivering, listens, and on SIGTERM/SIGINT drains
 * within config.shutdownTimeoutMs and exits 0 (1 if the drain itself failed). A second signal
 * within SIGNAL_COPY_WINDOW_MS is ignored; a later one exits at once (130 or 143).
 */
export async function runServer(config: Config, log: Log = createLogger(config.logLevel)): Promise<RunningServer> {
  const postbox = await Postbox.open({ config, log, processMetrics: true })
  let running: RunningServer
  try {
    running = await listen(postbox, log)
  } catch (err) {
    await postbox.close()
    throw err
  }
  // After listening: a server that cannot take its port (exit 2) neither delivers nor sweeps.
  postbox.start()
  let firstSignalAt: number | null = null
  const stop = (signal: NodeJS.Signals): void => {
    if (firstSignalAt !== null) {
      if (performance.now() - firstSignalAt < SIGNAL_COPY_WINDOW_MS) {
        log.info({ signal }, `ignored: a copy of the first signal (within ${SIGNAL_COPY_WINDOW_MS / 1000} s); still draining. Press Ctrl-C again (or send SIGTERM) later to force an exit`)
        return
      }
      log.warn({ signal }, 'forced exit: the drain was not finished; deliveries still in flight are offered again at the next start')
      log.flush?.()
      process.exit(signal === 'SIGINT' ? 130 : 143)
    }
    firstSignalAt = performance.now()
    log.info({ signal, deadlineMs: config.shutdownTimeoutMs }, 'shutting down')
    log.info(`draining (up to ${config.shutdownTimeoutMs / 1000} s); to exit at once, press Ctrl-C again (or send SIGTERM) ${SIGNAL_COPY_WINDOW_MS / 1000} s or more after the first`)
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
  // on, not once: a second signal must reach stop() (a copy is ignored), never Node's default (exit at once).
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
  return running
}
