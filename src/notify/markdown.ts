import { Marked } from 'marked'

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

/** Renders a markdown notification body to the HTML part of an email (raw HTML escaped, unsafe links dropped). */
export function markdownToHtml(src: string): string {
  return md.parse(src, { async: false })
}
