import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const root = fileURLToPath(new URL('.', import.meta.url))

/**
 * The console and the portal: two HTML entries sharing components, built to dist/web with
 * hashed asset names (served immutable by src/api/web.ts). JSX is compiled by Vite's own
 * transform (Oxc) for Preact; no plugin is needed.
 */
export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  // The typed client of the package (sdk/client), by the name the package exports it under.
  resolve: { alias: { 'postbox/client': fileURLToPath(new URL('../sdk/client/index.ts', import.meta.url)) } },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    // The polyfill would be bundled anyway, but every browser that runs ES modules preloads them.
    modulePreload: { polyfill: false },
    // Everything, even small files, is a hashed file: CSP forbids inline data we would need to allow.
    assetsInlineLimit: 0,
    target: 'es2022',
    rollupOptions: {
      input: { console: `${root}console.html`, portal: `${root}portal.html` },
    },
  },
})
