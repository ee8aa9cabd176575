// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * The layer rule of DESIGN.md: lib ← store ← {delivery, webhooks, notify} ← api ← postbox/server/cli,
 * with auth (keys, portal tokens) ← apps (applications, the catalog) between store and webhooks.
 * Each entry lists the folders a layer must not import from.
 */
const layers = [
  { files: ['src/lib/**/*.ts'], banned: ['store', 'auth', 'apps', 'delivery', 'webhooks', 'notify', 'api', 'config', 'errors', 'log', 'postbox', 'server', 'cli'] },
  { files: ['src/store/**/*.ts'], banned: ['delivery', 'webhooks', 'notify', 'api', 'postbox', 'server', 'cli', 'auth', 'apps'] },
  // Credentials (API keys, portal tokens) sit on the store; applications and the catalog on both.
  { files: ['src/auth/**/*.ts'], banned: ['apps', 'delivery', 'webhooks', 'notify', 'api', 'postbox', 'server', 'cli'] },
  { files: ['src/apps/**/*.ts'], banned: ['delivery', 'webhooks', 'notify', 'api', 'postbox', 'server', 'cli'] },
  { files: ['src/delivery/**/*.ts'], banned: ['webhooks', 'notify', 'api', 'postbox', 'server', 'cli'] },
  { files: ['src/webhooks/**/*.ts'], banned: ['notify', 'api', 'postbox', 'server', 'cli'] },
  { files: ['src/notify/**/*.ts'], banned: ['api', 'postbox', 'server', 'cli'] },
  { files: ['src/api/**/*.ts'], banned: ['postbox', 'server', 'cli'] },
]

const sqlOutsideStore = {
  selector: "CallExpression[callee.object.name='db'][callee.property.name=/^(prepare|exec|pragma|transaction)$/]",
  message: 'SQL lives only in src/store/ (DESIGN.md).',
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
  ...layers.map(({ files, banned }) => ({
    files,
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: banned.map((folder) => ({
            regex: `^(\\.\\./)+(${folder})(/|\\.js$)`,
            message: `Layer rule (DESIGN.md): this folder must not import from ${folder}.`,
          })),
        },
      ],
    },
  })),
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
)
