// @ts-check
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/** Modules every layer may import (docs/architecture.md): configuration, the error type, the logger. */
const ANYWHERE = ['config', 'config-kinds', 'errors', 'log']

/**
 * The top-level modules of src/ (engine, metrics, postbox, server, cli, …), read from the folder
 * so a new one is covered at once: they sit above every layer, which may import none of them
 * except ANYWHERE.
 */
const TOP = readdirSync(join(dirname(fileURLToPath(import.meta.url)), 'src'))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
  .map((f) => f.slice(0, -3))
  .filter((name) => !ANYWHERE.includes(name))

/**
 * The layer rule (docs/architecture.md): lib ← store ← auth ← apps ← {delivery, webhooks, notify} ← api ←
 * the top-level modules. Each entry lists the folders and modules a layer must not import from.
 */
const layers = [
  { files: ['src/lib/**/*.ts'], banned: ['store', 'auth', 'apps', 'delivery', 'webhooks', 'notify', 'api', ...ANYWHERE, ...TOP] },
  { files: ['src/store/**/*.ts'], banned: ['auth', 'apps', 'delivery', 'webhooks', 'notify', 'api', ...TOP] },
  // Credentials (API keys, portal tokens) sit on the store; applications and the catalog on both.
  { files: ['src/auth/**/*.ts'], banned: ['apps', 'delivery', 'webhooks', 'notify', 'api', ...TOP] },
  { files: ['src/apps/**/*.ts'], banned: ['delivery', 'webhooks', 'notify', 'api', ...TOP] },
  { files: ['src/delivery/**/*.ts'], banned: ['webhooks', 'notify', 'api', ...TOP] },
  { files: ['src/webhooks/**/*.ts'], banned: ['notify', 'api', ...TOP] },
  { files: ['src/notify/**/*.ts'], banned: ['api', ...TOP] },
  { files: ['src/api/**/*.ts'], banned: TOP },
]

/**
 * The layer rule for `files`: no relative import that climbs `depth` or more folders into a
 * banned one, and none matching the `extra` patterns ({ regex, message }).
 */
function layerRule(files, banned, depth, extra = []) {
  return {
    files,
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...banned.map((folder) => ({
              regex: `^(\\.\\./){${depth},}(${folder})(/|\\.js$)`,
              message: `Layer rule (docs/architecture.md): this folder must not import from ${folder}.`,
            })),
            ...extra,
          ],
        },
      ],
    },
  }
}

/**
 * The store's two backends (docs/architecture.md, "The store"): the services see only the
 * contract at the root of src/store/, and neither backend imports the other.
 */
const BACKENDS_ARE_THE_STORES_OWN = { regex: '^(\\.\\./)+store/(sqlite|pg)/', message: 'Layer rule (docs/architecture.md): import the store contract (src/store/*.ts), never a backend.' }
const NOT_SQLITE = { regex: '^\\.\\./sqlite/', message: 'Layer rule (docs/architecture.md): the PostgreSQL backend never imports the SQLite one.' }
const NOT_PG = { regex: '^\\.\\./pg/', message: 'Layer rule (docs/architecture.md): the SQLite backend never imports the PostgreSQL one.' }

const sqlOutsideStore = {
  selector: "CallExpression[callee.object.name='db'][callee.property.name=/^(prepare|exec|pragma|transaction)$/]",
  message: 'SQL lives only in src/store/ (docs/architecture.md).',
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  ...layers.map(({ files, banned }, i) => layerRule(files, banned, 1, i >= 2 ? [BACKENDS_ARE_THE_STORES_OWN] : [])),
  // One folder down (each backend), `../` is still the store: `../index.js`, `../apps.js` are the
  // contract, and a path leaves the layer only from `../../` on.
  layerRule(['src/store/pg/**/*.ts'], layers[1].banned, 2, [NOT_SQLITE]),
  layerRule(['src/store/sqlite/**/*.ts'], layers[1].banned, 2, [NOT_PG]),
  {
    // The web face is a client of the API (DESIGN.md): the SDK never imports server modules.
    files: ['sdk/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+(src|scripts)/', message: 'sdk/ uses only the typed client, never server modules (DESIGN.md).' }] }],
    },
  },
  {
    // The console and the portal are clients of the API (DESIGN.md): postbox/client, never server modules.
    files: ['web/src/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+(src|scripts)/', message: 'web/ uses only the typed client, never server modules (DESIGN.md).' }] }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/store/**', '**/*.test.ts'],
    rules: { 'no-restricted-syntax': ['error', sqlOutsideStore] },
  },
  {
    // The store is asynchronous (docs/architecture.md): a promise left unawaited, or tested as a
    // value, is a write that may not have happened or a row that was never read.
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: dirname(fileURLToPath(import.meta.url)) } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
    },
  },
)
