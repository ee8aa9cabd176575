/**
 * The nesting bound of markdown bodies (issue #36, finding 2). marked parses containers
 * recursively: 2,000 nested blockquotes or list items overflow the stack, and a staircase of
 * nested lines costs time quadratic in its depth (measured with marked 18: 500 lines each one
 * level deeper took 1.2 s as blockquotes and 2.2 s as indented lists; 2,000 took 49 s and 187 s).
 * So a body is measured before it is rendered, without marked: per line, each leading container
 * marker (`>`, a list bullet or number) is one level, and leading spaces before one count a level
 * per two (a nested list item's smallest indent). Code whose indented lines start with `-` is
 * over-counted, never under-counted: fence tracking would let a malformed fence hide the rest.
 */

/**
 * The deepest markdown nesting rendered: past what people write, far below marked's stack limit
 * (about 1,000 levels). At 16, the costliest 100 KB body measured (a staircase of blockquotes
 * and list items, each line deeper) renders in 2.7 s on a loaded 2-core machine; at 32 a 256 KB
 * one took 10.5 s.
 */
export const MAX_MARKDOWN_DEPTH = 16

/**
 * The longest run of `*` or `_` rendered. marked's emphasis matching is quadratic in a run and
 * recursive: a run of 10,000 overflowed its stack, and 50,000 on each side of a word took 16 s.
 */
export const MAX_EMPHASIS_RUN = 64

/** Stable code of a markdown body nested too deep: the 422 answer of a preview and the error of an email that ends dead. */
export const MARKDOWN_TOO_DEEP = 'markdown_too_deep'

// One container marker, with the spaces after it: `>`, or a bullet or an ordered number followed by a space or the line end.
const MARKER = /^(?:>|[-*+](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))[ \t]*/

/** The deepest container nesting of any line of `src` (0 for plain paragraphs), as bounded by MAX_MARKDOWN_DEPTH. */
export function markdownDepth(src: string): number {
  let deepest = 0
  for (const line of src.split('\n')) {
    let depth = 0
    let rest = line
    for (;;) {
      const spaces = /^[ \t]*/.exec(rest)![0]
      const m = MARKER.exec(rest.slice(spaces.length))
      if (!m) break
      // A tab counts as four columns, as CommonMark expands it.
      depth += 1 + Math.floor(spaces.replace(/\t/g, '    ').length / 2)
      rest = rest.slice(spaces.length + m[0].length)
      // Past the bound the line's exact depth no longer matters.
      if (depth > MAX_MARKDOWN_DEPTH) return depth
    }
    if (depth > deepest) deepest = depth
  }
  return deepest
}

const LONG_EMPHASIS_RUN = new RegExp(`[*_]{${MAX_EMPHASIS_RUN + 1}}`)
const THEMATIC_BREAK = /^[ \t]*[*_][*_ \t]*$/

/** Why `src` may not be rendered as markdown (nested deeper than MAX_MARKDOWN_DEPTH, or an emphasis run past MAX_EMPHASIS_RUN), or null. */
export function markdownTooDeep(src: string): string | null {
  if (markdownDepth(src) > MAX_MARKDOWN_DEPTH) {
    return `markdown nested more than ${MAX_MARKDOWN_DEPTH} levels deep (blockquotes, lists or indentation before a list marker)`
  }
  // A line of only `*`, `_` and spaces is a thematic break, parsed as one block.
  if (src.split('\n').some((line) => LONG_EMPHASIS_RUN.test(line) && !THEMATIC_BREAK.test(line))) return `markdown with a run of more than ${MAX_EMPHASIS_RUN} '*' or '_' characters (escape them, or use a code span)`
  return null
}
