import { STEPS_V1_V4 } from './migrations-v1-v4.js'
import { STEPS_V5_V13 } from './migrations-v5-v13.js'
import { STEPS_V14 } from './migrations-v14.js'

/**
 * Forward-only schema steps. MIGRATIONS[v] takes a database from user_version v to v + 1.
 * schema.sql is the truth for new files; test/schema-migration.test.ts checks that a file
 * created at version 1 and migrated ends up with exactly the schema of a fresh one.
 */
export const MIGRATIONS: readonly string[] = [...STEPS_V1_V4, ...STEPS_V5_V13, ...STEPS_V14]
