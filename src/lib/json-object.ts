import { z } from '@hono/zod-openapi'

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * A JSON object (string keys, values checked by `value` when given) that passes through parsing
 * unchanged. `z.record` builds a new object and silently drops a `__proto__` key, which
 * `JSON.parse` makes an ordinary own property: an accepted payload would then reach receivers
 * without it. Nothing here assigns these keys onto other objects, so keeping them is safe.
 */
export function jsonObject<T = unknown>(message: string, value?: (v: unknown) => v is T) {
  return z
    .custom<Record<string, T>>((v) => isObject(v) && (value === undefined || Object.values(v).every(value)), { message })
    .openapi({ type: 'object', additionalProperties: true })
}
