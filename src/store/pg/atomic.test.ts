import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshPgDatabase, PG_URL } from '../../../test/support/pg.js'
import { atomically } from './atomic.js'

describe.runIf(PG_URL)('atomically', () => {
  let db: Awaited<ReturnType<typeof freshPgDatabase>>
  let pool: pg.Pool
  const rows = async (): Promise<number[]> => (await pool.query<{ n: number }>('SELECT n FROM t ORDER BY n')).rows.map((r) => r.n)
  beforeAll(async () => {
    db = await freshPgDatabase()
    pool = new pg.Pool({ connectionString: db.url, max: 2 })
    await pool.query('CREATE TABLE t (n int PRIMARY KEY)')
  })
  afterAll(async () => {
    await pool?.end()
    await db?.drop()
  })

  it('runs the statements withCommit names last, with the COMMIT, and passes the result through', async () => {
    await pool.query('DELETE FROM t')
    const out = await atomically(pool, async (c) => (await c.query('INSERT INTO t VALUES (1)'), 'done'), (r) => (r === 'done' ? 'INSERT INTO t VALUES (2)' : null))
    expect(out).toBe('done')
    expect(await rows()).toEqual([1, 2])
    expect(await atomically(pool, async (c) => (await c.query('INSERT INTO t VALUES (3)'), 0), () => null)).toBe(0)
    expect(await rows()).toEqual([1, 2, 3])
  })

  it('rolls the whole transaction back when a withCommit statement fails, and the pool stays usable', async () => {
    await pool.query('DELETE FROM t')
    await expect(atomically(pool, async (c) => c.query('INSERT INTO t VALUES (1)'), () => 'SELECT 1 / 0')).rejects.toThrow(/division by zero/)
    expect(await rows()).toEqual([])
    // Every connection of the pool comes back out of the failed transaction.
    await Promise.all([1, 2].map((n) => atomically(pool, async (c) => c.query('INSERT INTO t VALUES ($1)', [n]))))
    expect(await rows()).toEqual([1, 2])
  })

  it("inside a caller's transaction, runs withCommit's statements on that client and leaves the commit to the caller", async () => {
    await pool.query('DELETE FROM t')
    const c = await pool.connect()
    try {
      await c.query('BEGIN')
      await atomically(c, async (q) => q.query('INSERT INTO t VALUES (1)'), () => 'INSERT INTO t VALUES (2)')
      expect((await c.query<{ n: number }>('SELECT n FROM t ORDER BY n')).rows.map((r) => r.n)).toEqual([1, 2])
      expect(await rows()).toEqual([])
      await c.query('ROLLBACK')
    } finally {
      c.release()
    }
    expect(await rows()).toEqual([])
  })
})
