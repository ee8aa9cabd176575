import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { PG_URL } from '../../../test/support/pg.js'
import { isStorageUnavailable } from '../../errors.js'
import { createPgPool, databaseUrlFromEnv, isPgUrl, PREPARED_LIMIT, redactPgUrl, withPgTransaction } from './pool.js'

describe('PostgreSQL URLs', () => {
  it('recognises postgres URLs and reads POSTBOX_DATABASE_URL', () => {
    expect(isPgUrl('postgres://u@h/db')).toBe(true)
    expect(isPgUrl('postgresql://u@h/db')).toBe(true)
    expect(isPgUrl('./data/postbox.db')).toBe(false)
    expect(databaseUrlFromEnv({ POSTBOX_DATABASE_URL: ' postgres://h/db ' })).toBe('postgres://h/db')
    expect(databaseUrlFromEnv({ POSTBOX_DATABASE_URL: '' })).toBeUndefined()
    expect(databaseUrlFromEnv({})).toBeUndefined()
  })
  it('leaves the password out of what it shows', () => {
    expect(redactPgUrl('postgres://pb:s3cret@db.example:5432/postbox?sslmode=require')).toBe('postgres://pb@db.example:5432/postbox?sslmode=require')
    expect(redactPgUrl('postgres://pb@db.example/postbox')).toBe('postgres://pb@db.example/postbox')
  })
})

describe.runIf(PG_URL)('createPgPool', () => {
  let pool: pg.Pool
  beforeAll(() => {
    pool = createPgPool(PG_URL!, { max: 2 })
  })
  afterAll(async () => {
    await pool?.end()
  })

  it('reads int8 and numeric as numbers on its own connections only', async () => {
    const { rows } = await pool.query(`SELECT count(*) AS n, 8640000000000000::bigint AS big, sum(x::bigint) AS s, 1::int AS flag FROM (VALUES (1), (2)) v(x)`)
    expect(rows[0]).toEqual({ n: 2, big: 8640000000000000, s: 3, flag: 1 })
    const plain = new pg.Client({ connectionString: PG_URL })
    await plain.connect()
    try {
      expect((await plain.query(`SELECT count(*) AS n`)).rows[0]).toEqual({ n: '1' })
    } finally {
      await plain.end()
    }
  })

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    const table = `pool_test_${process.pid}_${Date.now()}`
    await pool.query(`CREATE TABLE ${table} (x int)`)
    try {
      await withPgTransaction(pool, (q) => q.query(`INSERT INTO ${table} VALUES (1)`))
      await expect(
        withPgTransaction(pool, async (q) => {
          await q.query(`INSERT INTO ${table} VALUES (2)`)
          throw new Error('boom')
        }),
      ).rejects.toThrow('boom')
      expect((await pool.query(`SELECT x FROM ${table}`)).rows).toEqual([{ x: 1 }])
    } finally {
      await pool.query(`DROP TABLE ${table}`)
    }
  })

  it('sends statements with parameters as named prepared statements, and statements without as before', async () => {
    const c = await pool.connect()
    try {
      const prepared = async (): Promise<string[]> =>
        (await c.query<{ statement: string }>(`SELECT statement FROM pg_prepared_statements ORDER BY prepare_time`)).rows.map((r) => r.statement)
      const before = await prepared()
      expect((await c.query(`SELECT $1::int + 1 AS n`, [41])).rows).toEqual([{ n: 42 }])
      expect((await c.query(`SELECT $1::int + 1 AS n`, [1])).rows).toEqual([{ n: 2 }])
      await c.query(`SELECT 7 AS unparameterised`)
      expect((await prepared()).slice(before.length)).toEqual(['SELECT $1::int + 1 AS n'])
      // A statement that fails to prepare leaves no name behind: the same text fails again the same way.
      await expect(c.query(`SELECT $1::int FROM no_such_table_here`, [1])).rejects.toThrow(/does not exist/)
      await expect(c.query(`SELECT $1::int FROM no_such_table_here`, [1])).rejects.toThrow(/no_such_table_here/)
      // One that fails while running keeps its plan, and runs again.
      await expect(c.query(`SELECT 1 / $1::int AS q`, [0])).rejects.toThrow(/division by zero/)
      expect((await c.query(`SELECT 1 / $1::int AS q`, [1])).rows).toEqual([{ q: 1 }])
      // Through the pool's own query (its callback form) too.
      expect((await pool.query(`SELECT $1::text AS t`, ['pool'])).rows).toEqual([{ t: 'pool' }])
    } finally {
      c.release()
    }
  })

  it('names at most PREPARED_LIMIT texts; later ones run unnamed', async () => {
    const c = await pool.connect()
    try {
      for (let k = 0; k <= PREPARED_LIMIT; k++) expect((await c.query(`SELECT $1::int + ${k} AS n`, [1])).rows[0]).toEqual({ n: k + 1 })
      const { rows } = await c.query<{ n: number }>(`SELECT count(*) AS n FROM pg_prepared_statements`)
      expect(rows[0]!.n).toBeLessThanOrEqual(PREPARED_LIMIT)
      expect(rows[0]!.n).toBeGreaterThan(PREPARED_LIMIT / 2)
    } finally {
      c.release()
    }
  })

  it('outlives the backends of its connections being terminated, idle, checked out, or inside a transaction', async () => {
    const errs: Error[] = []
    const p = createPgPool(PG_URL!, { max: 2, onError: (e) => errs.push(e) })
    const reported = async (n: number): Promise<void> => {
      for (let i = 0; errs.length < n; i++) {
        if (i > 400) throw new Error(`${errs.length} connection errors reported, not ${n}`)
        await new Promise((r) => setTimeout(r, 25))
      }
    }
    const terminate = (pid: number) => pool.query(`SELECT pg_terminate_backend($1)`, [pid])
    try {
      // Checked out, between statements: the server's FATAL arrives while nothing runs on it.
      const c = await p.connect()
      const pid = (await c.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid
      await terminate(pid)
      await reported(1)
      await expect(c.query(`SELECT 1`)).rejects.toSatisfy(isStorageUnavailable)
      c.release()
      // Inside a transaction: the caller sees an error that maps to 503 unavailable.
      const before = errs.length
      const failed = await withPgTransaction(p, async (q) => {
        await terminate((await q.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid)
        await reported(before + 1)
        await q.query(`SELECT 1`)
      }).catch((e: unknown) => e)
      expect(isStorageUnavailable(failed)).toBe(true)
      // Idle in the pool.
      const idle = (await p.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid
      const n = errs.length
      await terminate(idle)
      await reported(n + 1)
      // The dead connections were dropped: the pool serves the next statements on new ones.
      expect((await p.query(`SELECT 1 AS one`)).rows).toEqual([{ one: 1 }])
      expect((await withPgTransaction(p, (q) => q.query(`SELECT 2 AS two`))).rows).toEqual([{ two: 2 }])
      expect(errs.every((e) => isStorageUnavailable(e))).toBe(true)
    } finally {
      await p.end()
    }
  })

  it('prepares nothing when preparedStatements is false', async () => {
    const plain = createPgPool(PG_URL!, { max: 1, preparedStatements: false })
    try {
      expect((await plain.query(`SELECT $1::int * 2 AS n`, [21])).rows).toEqual([{ n: 42 }])
      expect((await plain.query(`SELECT count(*) AS n FROM pg_prepared_statements`)).rows).toEqual([{ n: 0 }])
    } finally {
      await plain.end()
    }
  })
})
