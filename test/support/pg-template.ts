import type { TestProject } from 'vitest/node'
import { openPgStore } from '../../src/store/pg/index.js'
import { freshPgDatabase } from './pg.js'


/**
 * Global setup of the `postgres` project (vitest.config.ts): one database migrated to the
 * current schema, which every fixture copies instead of migrating its own (the copy is the
 * cheaper half of a fixture's start); dropped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const db = await freshPgDatabase()
  const store = await openPgStore(db.url, { schema: 'migrate' })
  await store.close()
  project.provide('pgTemplate', new URL(db.url).pathname.slice(1))
  return db.drop
}
