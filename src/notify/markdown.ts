import { Marked } from 'marked'
import { AppError } from '../errors.js'
import { MARKDOWN_TOO_DEEP, markdownTooDeep } from './markdown-depth.js'

/** Link and image targets an email may carry: web, mail and site-relative addresses. */
const SAFE_URL = /^(?:https?:|mailto:|\/(?!\/))/i

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

// Templates are written by operators, but the values Liquid puts into them come from whoever
// sends the notification. So raw HTML in markdown is shown as text, and links or images whose
// target is not a web or mail address keep only their text.
const md = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    link({ href, tokens }) {
      return SAFE_URL.test(href) ? false : this.parser.parseInline(tokens)
    },
    image({ href, text }) {
      return SAFE_URL.test(href) ? false : escapeHtml(text)
    },
  },
})

/**
 * Renders a markdown notification body to the HTML part of an email (raw HTML escaped, unsafe
 * links dropped). A body nested deeper than MAX_MARKDOWN_DEPTH is refused before marked sees it
 * with 422 `markdown_too_deep`, as is anything else that overflows marked's stack (inline runs).
 */
export function markdownToHtml(src: string): string {
  const tooDeep = markdownTooDeep(src)
  if (tooDeep !== null) throw new AppError(MARKDOWN_TOO_DEEP, 422, tooDeep)
  try {
    return md.parse(src, { async: false })
  } catch (err) {
    if (err instanceof RangeError) throw new AppError(MARKDOWN_TOO_DEEP, 422, 'markdown nested too deeply to render')
    throw err
  }
}
