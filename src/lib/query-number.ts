import { z } from '@hono/zod-openapi'

/**
 * A whole number in a query string, in plain decimal only: `16`, never `0x10`, `1e2`, ` 5`,
 * `+5` or `5.0` (which Number() and z.coerce would take). Parsed to a number in [min, max].
 */
export function decimalInt(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number in plain decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max })
}
