import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { PG_URL } from '../../../test/support/pg.js'
import { createPgPool, databaseUrlFromEnv, isPgUrl, redactPgUrl, withPgTransaction } from './pool.js'

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
})
