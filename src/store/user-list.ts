import { type KeySlice, type UserRow } from './directory.js'
import { decodeKeyCursor, encodeKeyCursor } from '../lib/cursor.js'
/** The sort key of the user list: newest first, then by id. */
export interface UserListKey {
  createdAt: number
  id: string
}

/** `GET /v1/users` filters; null leaves one out. `q` is matched case-insensitively (ASCII). */
export interface UserListFilter {
  role: string | null
  team: string | null
  q: string | null
}

/** Cursors of the user list (`usr/<created_at>/<id>` of the last row). */
export const userListCursor = {
  encode: (r: Pick<UserRow, 'createdAt' | 'id'>): string => encodeKeyCursor('usr', [r.createdAt, r.id]),
  decode(cursor: string): UserListKey | null {
    const f = decodeKeyCursor(cursor, 'usr', 2)
    if (f === null || !/^\d{1,15}$/.test(f[0]!)) return null
    return { createdAt: Number(f[0]), id: f[1]! }
  },
}

/** The directory's user list with filters (GET /v1/users). */
export interface UserListStore {
  list(filter: UserListFilter, slice: KeySlice<UserListKey>): UserRow[]
}
