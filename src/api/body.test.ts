import { describe, expect, it } from 'vitest'
import { isEncodedBody, isJsonContentType, jsonDepth, hasLoneSurrogate } from './body.js'

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
    ['application/json ; charset=utf-8', true],
    ['APPLICATION/JSON\t;charset=UTF-8', true],
    [' application/json;', true],
    ['application / json', false],
    ['text/json', false],
    ['application/jsonp', false],
    ['text/plain', false],
    [undefined, false],
    ['', false],
  ])('%s → %s', (header, ok) => {
    expect(isJsonContentType(header)).toBe(ok)
  })
})

describe('isEncodedBody', () => {
  it.each([
    ['gzip', true],
    ['GZip', true],
    ['br', true],
    ['deflate', true],
    ['identity, gzip', true],
    ['identity', false],
    [' Identity ', false],
    ['', false],
    [undefined, false],
  ])('%j → %s', (header, encoded) => {
    expect(isEncodedBody(header)).toBe(encoded)
  })
})

describe('hasLoneSurrogate', () => {
  it.each([
    ['plain text', { a: 'héllo 😀' }, false],
    ['a paired surrogate escape', JSON.parse('{"a":"\\ud83d\\ude00"}'), false],
    ['a lone high surrogate in a value', JSON.parse('{"a":"x\\ud800"}'), true],
    ['a lone low surrogate deep in an array', JSON.parse('{"a":[1,{"b":["\\udc00"]}]}'), true],
    ['a lone surrogate in a key', JSON.parse('{"\\ud800":1}'), true],
    ['numbers and nulls', [1, null, true], false],
  ])('%s', (_name, value, expected) => {
    expect(hasLoneSurrogate(value)).toBe(expected)
  })
})
