import type { Db } from './db.js'
import type { KeySlice, UserRow } from './directory.js'
import { decodeKeyCursor, encodeKeyCursor } from '../lib/cursor.js'
import { parseJsonOr } from '../lib/json.js'

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

const GROUP = (kind: string, param: string) =>
  `(@${param} IS NULL OR EXISTS (SELECT 1 FROM user_groups g WHERE g.kind = '${kind}' AND g.name = @${param} AND g.user_id = u.id))`

/** The user list statement (exported for tests). */
export const USER_LIST_SQL = `SELECT u.id, u.email, u.name, u.locale, u.timezone, u.roles, u.teams, u.created_at AS createdAt, u.updated_at AS updatedAt
  FROM users u
  WHERE ${GROUP('role', 'role')} AND ${GROUP('team', 'team')}
    AND (@q IS NULL OR instr(lower(u.id), @q) > 0 OR instr(lower(coalesce(u.email, '')), @q) > 0 OR instr(lower(coalesce(u.name, '')), @q) > 0)
    AND (@afterT IS NULL OR u.created_at < @afterT OR (u.created_at = @afterT AND u.id > @afterId))
  ORDER BY u.created_at DESC, u.id LIMIT @limit`

/** The directory's user list with filters (GET /v1/users). */
export interface UserListStore {
  list(filter: UserListFilter, slice: KeySlice<UserListKey>): UserRow[]
}

/** Creates the user list over a connection. */
export function createUserListStore(db: Db): UserListStore {
  const st = db.prepare(USER_LIST_SQL)
  return {
    list(f, slice) {
      const rows = st.all({
        role: f.role,
        team: f.team,
        q: f.q === null ? null : f.q.toLowerCase(),
        afterT: slice.after?.createdAt ?? null,
        afterId: slice.after?.id ?? '',
        limit: slice.limit,
      }) as (Omit<UserRow, 'roles' | 'teams'> & { roles: string; teams: string })[]
      return rows.map((r) => ({ ...r, roles: parseJsonOr<string[]>(r.roles, []), teams: parseJsonOr<string[]>(r.teams, []) }))
    },
  }
}
