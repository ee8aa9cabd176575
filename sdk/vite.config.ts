import { copyFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

/**
 * `npm run build:sdk`: the inbox element as one ES module, dist/sdk/inbox.js (openapi-fetch
 * bundled in, nothing else), which the server serves at /sdk/inbox.js and the package exports
 * as `postbox/inbox`. It also puts the generated client types next to the compiled client.
 */
const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, '..', 'dist', 'sdk')

export default defineConfig({
  root: here,
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: dist,
    // dist/sdk also holds the client compiled by tsc: never wipe it.
    emptyOutDir: false,
    target: 'es2020',
    minify: true,
    sourcemap: true,
    lib: { entry: join(here, 'inbox', 'index.ts'), formats: ['es'], fileName: () => 'inbox.js' },
  },
  plugins: [
    {
      name: 'postbox-client-types',
      closeBundle() {
        mkdirSync(join(dist, 'client'), { recursive: true })
        copyFileSync(join(here, 'client', 'schema.d.ts'), join(dist, 'client', 'schema.d.ts'))
      },
    },
  ],
})
