import { createApiKey } from '../../src/auth/keys.js'
import { Postbox, type PostboxOptions } from '../../src/postbox.js'
import { tempDir } from '../helpers.js'
import { testDatabase } from './backend.js'

/** The first admin key every API fixture starts with (POSTBOX_ADMIN_KEY). */
export const ADMIN_KEY = 'pbk_' + 'A'.repeat(43)

/** Options of one test request. */
export interface Req {
  key?: string | null
  body?: unknown
  /** Sent as is (no JSON encoding) when a string. */
  raw?: string | Uint8Array | ReadableStream<Uint8Array>
  headers?: Record<string, string>
}

/** A Postbox in a temp dir with one key per role and a `call` helper over `app.request`. */
export interface ApiFixture {
  pb: Postbox
  dir: string
  keys: { admin: string; publisher: string; viewer: string }
  call(method: string, path: string, opts?: Req): Promise<Response>
  /** Calls and parses the JSON answer. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are probed loosely
  json(method: string, path: string, opts?: Req): Promise<{ status: number; body: any }>
  close(): Promise<void>
}

/**
 * Opens a fixture on the backend under test (test/support/backend.ts: a fresh PostgreSQL
 * database in the `postgres` project); `close()` closes the Postbox, deletes the directory and
 * drops the database.
 */
export async function apiFixture(opts: Partial<PostboxOptions> = {}): Promise<ApiFixture> {
  const { dir, cleanup } = tempDir('postbox-api-')
  const db = await testDatabase()
  let pb: Postbox
  try {
    pb = await Postbox.open({
      dataDir: dir, adminKey: ADMIN_KEY, allowNetworks: ['127.0.0.0/8'],
      ...(db.databaseUrl !== undefined ? { databaseUrl: db.databaseUrl } : {}), ...opts,
    })
  } catch (err) {
    await db.drop()
    cleanup()
    throw err
  }
  const now = Date.now()
  const publisher = (await createApiKey(pb.store, { name: 'pub', role: 'publisher' }, now)).key
  const viewer = (await createApiKey(pb.store, { name: 'view', role: 'viewer' }, now)).key
  const call = async (method: string, path: string, o: Req = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) }
    const key = o.key === undefined ? ADMIN_KEY : o.key
    if (key !== null) headers.authorization = `Bearer ${key}`
    let body: RequestInit["body"] | undefined
    if (o.raw !== undefined) body = o.raw as RequestInit["body"]
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body)
      headers['content-type'] ??= 'application/json'
    }
    const init: RequestInit & { duplex?: 'half' } = { method, headers, body }
    if (body instanceof ReadableStream) init.duplex = 'half'
    return pb.app.request(path, init)
  }
  return {
    pb,
    dir,
    keys: { admin: ADMIN_KEY, publisher, viewer },
    call,
    async json(method, path, o) {
      const res = await call(method, path, o)
      const text = await res.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {}
      return { status: res.status, body }
    },
    async close() {
      await pb.close()
      await db.drop()
      cleanup()
    },
  }
}

/** Follows next_cursor from `path` (`limit` rows a page, at most `maxPages` pages) and returns every page's data. */
export async function allPages<T = unknown>(f: ApiFixture, path: string, limit: number, maxPages = 100): Promise<T[][]> {
  const pages: T[][] = []
  let cursor: string | null = null
  for (let i = 0; i < maxPages; i++) {
    const sep = path.includes('?') ? '&' : '?'
    const r = await f.json('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
    pages.push(r.body.data)
    cursor = r.body.next_cursor
    if (cursor === null) return pages
  }
  throw new Error('too many pages')
}
