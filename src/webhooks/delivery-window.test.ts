import { describe, expect, it } from 'vitest'
import { decodeIdCursor, encodeCursor } from '../lib/cursor.js'
import { idFloor, newId } from '../lib/ids.js'
import { cutAtSince, deliveryWindow, readLimit } from './delivery-window.js'

const T = Date.parse('2026-12-07T12:00:00Z')
const HOUR = 3_600_000
/** A delivery id made at `ms` (newId never goes back, so each test makes its ids oldest first). */
const at = (ms: number): { id: string } => ({ id: newId('dlv', ms) })

describe('deliveryWindow and cutAtSince (the ?since=&until= of GET /v1/deliveries)', () => {
  it('until starts the reading at the first id of that time, unless the cursor is already older', () => {
    const until = new Date(T).toISOString()
    expect(decodeIdCursor(deliveryWindow({ until }).cursor)).toBe(idFloor('dlv', T))
    const older = encodeCursor(idFloor('dlv', T - HOUR))
    expect(deliveryWindow({ until, cursor: older }).cursor).toBe(older)
    const newer = encodeCursor(idFloor('dlv', T + HOUR))
    expect(decodeIdCursor(deliveryWindow({ until, cursor: newer }).cursor)).toBe(idFloor('dlv', T))
    expect(deliveryWindow({}).cursor).toBeNull()
  })

  it('since ends the list: the page that crosses it is the last, and a full page looks one row ahead', () => {
    const old = at(T - HOUR)
    const a = at(T + HOUR)
    const b = at(T + 2 * HOUR)
    const w = deliveryWindow({ since: new Date(T).toISOString() })
    expect(readLimit(w, 1)).toBe(2)
    // Newest first, read with limit + 1.
    expect(cutAtSince({ data: [b, a], next_cursor: encodeCursor(a.id) }, w, 1)).toEqual({ data: [b], next_cursor: encodeCursor(b.id) })
    expect(cutAtSince({ data: [a, old], next_cursor: encodeCursor(old.id) }, w, 1)).toEqual({ data: [a], next_cursor: null })
    // A short page of a capped scan goes on only while its cursor is inside the window.
    expect(cutAtSince({ data: [], next_cursor: encodeCursor(a.id) }, w, 1)).toEqual({ data: [], next_cursor: encodeCursor(a.id) })
    expect(cutAtSince({ data: [], next_cursor: encodeCursor(old.id) }, w, 1)).toEqual({ data: [], next_cursor: null })
  })

  it('refuses a window that is empty or not a time (400 validation_failed, naming the field)', () => {
    const iso = new Date(T).toISOString()
    const refusal = (f: { since?: string; until?: string }): unknown => {
      try {
        deliveryWindow(f)
      } catch (e) {
        return e
      }
      return null
    }
    expect(refusal({ since: iso, until: iso })).toMatchObject({ code: 'validation_failed', status: 400, details: [{ field: 'since', message: 'must be before until' }] })
    expect(refusal({ until: 'yesterday' })).toMatchObject({ code: 'validation_failed', details: [{ field: 'until', message: 'must be an ISO 8601 time' }] })
  })
})
