import { join } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

// The probed files do not exist, so the type-aware rules (which need a file the TypeScript project
// service knows) are off here: only the layer rule is under test.
const eslint = new ESLint({
  cwd: join(import.meta.dirname, '..'),
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: { '@typescript-eslint/no-floating-promises': 'off', '@typescript-eslint/no-misused-promises': 'off', '@typescript-eslint/await-thenable': 'off' },
  },
})

/** The layer-rule messages ESLint gives `code` as if it were the file `path`. */
async function layerErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(import.meta.dirname, '..', path) })
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message)
}

describe('the layer lint rule (eslint.config.js)', () => {
  it.each([
    ['src/store/x.ts', '../engine.js'],
    ['src/store/x.ts', '../metrics.js'],
    ['src/store/x.ts', '../postbox.js'],
    ['src/delivery/x.ts', '../admin-key.js'],
    ['src/notify/channels/x.ts', '../../engine.js'],
    ['src/api/x.ts', '../server.js'],
    ['src/api/x.ts', '../cli-args.js'],
    ['src/lib/x.ts', '../config.js'],
    ['src/store/x.ts', '../delivery/breaker.js'],
    ['src/webhooks/x.ts', '../notify/pipeline.js'],
    ['src/store/sqlite/x.ts', '../pg/pool.js'],
    ['src/store/pg/x.ts', '../sqlite/db.js'],
    ['src/store/sqlite/x.ts', '../../delivery/breaker.js'],
    ['src/delivery/x.ts', '../store/sqlite/deliveries.js'],
    ['src/notify/channels/x.ts', '../../store/pg/inbox.js'],
    ['src/api/x.ts', '../store/sqlite/index.js'],
  ])('refuses %s importing %s', async (path, target) => {
    expect(await layerErrors(path, `import { x } from '${target}'\nexport const y = x\n`)).toEqual([expect.stringMatching(/Layer rule/)])
  })

  it.each([
    ['src/store/x.ts', '../config.js'],
    ['src/store/x.ts', '../lib/clock.js'],
    ['src/delivery/x.ts', '../store/index.js'],
    ['src/notify/channels/x.ts', '../pipeline.js'],
    ['src/notify/channels/x.ts', '../../log.js'],
    ['src/api/x.ts', '../config-kinds.js'],
    ['src/engine.ts', './delivery/dispatcher.js'],
    ['src/store/sqlite/x.ts', '../deliveries.js'],
    ['src/store/pg/x.ts', '../index.js'],
    ['src/store/sqlite/x.ts', '../../lib/clock.js'],
    ['src/postbox.ts', './store/sqlite/retention.js'],
  ])('allows %s importing %s', async (path, target) => {
    expect(await layerErrors(path, `import { x } from '${target}'\nexport const y = x\n`)).toEqual([])
  })
})
