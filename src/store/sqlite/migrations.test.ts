import { describe, expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../schema.js'
import { MIGRATIONS } from './migrations.js'

describe('SQLite schema versions', () => {
  it('has one step for every version of the contract', () => {
    expect(MIGRATIONS.length).toBe(SCHEMA_VERSION)
  })
})
