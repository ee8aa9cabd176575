import { describe, expect, it } from 'vitest'
import { isJsonContentType, jsonDepth } from './body.js'

describe('jsonDepth', () => {
  it.each([
    ['1', 0],
    ['{}', 1],
    ['{"a":[1,{"b":[]}]}', 4],
    ['"[[[[["', 0],
    ['{"a":"\\"[[[["}', 1],
    ['[[],[[]]]', 3],
  ])('%s → %i', (text, depth) => {
    expect(jsonDepth(text)).toBe(depth)
  })
})

describe('isJsonContentType', () => {
  it.each([
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['Application/JSON', true],
    ['application/vnd.api+json', true],
    ['text/json', false],
    ['application/jsonp', false],
    ['text/plain', false],
    [undefined, false],
    ['', false],
  ])('%s → %s', (header, ok) => {
    expect(isJsonContentType(header)).toBe(ok)
  })
})
