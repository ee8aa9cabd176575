/** SQLite steps from v13 on (schema.sql is the truth; MIGRATIONS in migrations.ts joins them). */
export const STEPS_V14: readonly string[] = [
  /* v13 → v14: pull endpoints (see schema.sql). */
  `
-- ── v14: pull endpoints ──
ALTER TABLE endpoints ADD COLUMN mode TEXT NOT NULL DEFAULT 'push';
`,
]
