import { defineConfig } from 'vitest/config'

/**
 * The scenario tests that open a Postbox through the shared harnesses (test/support/api.ts,
 * webhooks-harness.ts, test/notify-harness.ts, test/helpers.ts tempBackendStore) and the crash
 * tests (test/support/crash-data.ts: real servers on one database) run a second
 * time on PostgreSQL when POSTBOX_TEST_PG_URL is set: the `postgres` project sets
 * POSTBOX_TEST_BACKEND=postgres and each fixture gets a fresh copy of a migrated database
 * (test/support/backend.ts, pg-template.ts).
 */
const POSTGRES_FILES = [
  'test/api-*.test.ts',
  'test/webhooks-*.test.ts',
  'test/requests*.test.ts',
  'test/notify-*.test.ts',
  'test/inbox-receipts.test.ts',
  'test/inbox-stream-snooze.test.ts',
  'test/crash-recovery.test.ts',
]
/**
 * Files of that list that are SQLite by nature (they start server processes on a data
 * directory's file). The ordering property test runs on both backends in the default project
 * (src/store/pg/ordering.property.test.ts compares them when POSTBOX_TEST_PG_URL is set).
 */
const SQLITE_ONLY = ['test/requests-process.test.ts']

const base = {
  testTimeout: 30_000,
  hookTimeout: 30_000,
  pool: 'forks' as const,
  setupFiles: ['test/setup/fast-check.ts'],
}

export default defineConfig({
  test: {
    reporters: ['default'],
    // Two at a time (vitest's default on 2 CPUs is one): most files wait on servers, sockets and
    // timers, not on the CPU, and the two backends' projects double the files.
    maxWorkers: 2,
    projects: [
      { test: { ...base, name: 'sqlite', include: ['src/**/*.test.ts', 'test/**/*.test.ts'] } },
      ...(process.env.POSTBOX_TEST_PG_URL
        ? [{ test: { ...base, name: 'postgres', include: POSTGRES_FILES, exclude: SQLITE_ONLY, globalSetup: ['test/support/pg-template.ts'], env: { POSTBOX_TEST_BACKEND: 'postgres' } } }]
        : []),
    ],
  },
})
