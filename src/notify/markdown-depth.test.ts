import { describe, expect, it } from 'vitest'
import { markdownDepth, markdownTooDeep, MAX_EMPHASIS_RUN, MAX_MARKDOWN_DEPTH } from './markdown-depth.js'

describe('markdownDepth', () => {
  it.each([
    ['plain text', 'hello *world*', 0],
    ['one quote', '> hi', 1],
    ['quotes without spaces', '>>> hi', 3],
    ['quote and list', '> - > 1. x', 4],
    ['indented list items', '- a\n  - b\n    - c', 3],
    ['a tab before a marker', '\t- x', 3],
    ['a dash inside a word is no marker', '-x - y', 0],
    ['deepest line wins', '> a\n>>>> b\n> c', 4],
  ])('%s', (_, src, depth) => expect(markdownDepth(src)).toBe(depth))
})

describe('markdownTooDeep', () => {
  it('refuses past MAX_MARKDOWN_DEPTH and past MAX_EMPHASIS_RUN, not at them', () => {
    expect(markdownTooDeep('>'.repeat(MAX_MARKDOWN_DEPTH) + ' x')).toBeNull()
    expect(markdownTooDeep('>'.repeat(MAX_MARKDOWN_DEPTH + 1) + ' x')).toMatch(/nested more than/)
    expect(markdownTooDeep('>'.repeat(100_000))).toMatch(/nested more than/)
    expect(markdownTooDeep('*'.repeat(MAX_EMPHASIS_RUN) + 'x')).toBeNull()
    expect(markdownTooDeep('a ' + '_'.repeat(MAX_EMPHASIS_RUN + 1) + 'x')).toMatch(/run of more than/)
    // A long thematic break is one block, cheap to parse.
    expect(markdownTooDeep('text\n\n' + '_'.repeat(200) + '\n')).toBeNull()
  })
})
