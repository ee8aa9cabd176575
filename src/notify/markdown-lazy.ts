import type { markdownToHtml as MarkdownToHtml } from './markdown.js'

let loading: Promise<typeof MarkdownToHtml> | null = null

/**
 * The markdown renderer, imported on first use: marked is ESM only, so the import is
 * asynchronous, and an idle server never loads it (docs/performance.md).
 */
export const loadMarkdown = (): Promise<typeof MarkdownToHtml> => (loading ??= import('./markdown.js').then((m) => m.markdownToHtml))
