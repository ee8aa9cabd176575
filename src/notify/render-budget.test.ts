import { describe, expect, it } from 'vitest'
import { RENDER_BUDGET_CAP_MS, RENDER_BUDGET_MS, renderBudgetMs, renderLimitFor } from './render-budget.js'
import { RENDER_LIMIT_MS } from './render.js'

describe('render budget', () => {
  it('scales with the audience between a floor and a ceiling', () => {
    expect([1, 20, 1000, 2000, 10_000, 100_000].map(renderBudgetMs)).toEqual([
      RENDER_BUDGET_MS, RENDER_BUDGET_MS, RENDER_BUDGET_MS, 2000, RENDER_BUDGET_CAP_MS, RENDER_BUDGET_CAP_MS,
    ])
  })

  const table: [string, [budget: number, spent: number, finished: number, audience: number], number][] = [
    ['the first render gets the full limit', [1000, 0, 0, 20], RENDER_LIMIT_MS],
    ['a render never gets more than what is left', [1000, 900, 1, 1], 100],
    ['nothing once the budget is spent', [1000, 1000, 3, 3], 0],
    ['a 200 ms template to 20 recipients stops after one render (200 x 20 > 1,000)', [1000, 200, 1, 20], 0],
    ['a slow first render does not decide before a tenth of the budget is spent', [10_000, 50, 1, 10_000], RENDER_LIMIT_MS],
    ['0.25 ms per recipient fits 10,000 recipients (2.5 s of 10 s)', [10_000, 1000, 4000, 10_000], RENDER_LIMIT_MS],
    ['2 ms per recipient would overrun 2,000 recipients (4 s of 2 s)', [2000, 200, 100, 2000], 0],
    ['an average just inside the budget keeps rendering', [1000, 900, 9, 10], 100],
  ]
  it.each(table)('%s', (_, args, expected) => {
    expect(renderLimitFor(...args)).toBe(expected)
  })
})
