import type { Db } from './db.js'
import type { UserRow } from '../directory.js'
import { parseJsonOr } from '../../lib/json.js'
import { type UserListStore } from '../user-list.js'

const GROUP = (kind: string, param: string) =>
  `(@${param} IS NULL OR EXISTS (SELECT 1 FROM user_groups g WHERE g.kind = '${kind}' AND g.name = @${param} AND g.user_id = u.id))`

/** The user list statement (exported for tests). */
export const USER_LIST_SQL = `SELECT u.id, u.email, u.name, u.locale, u.timezone, u.roles, u.teams, u.created_at AS createdAt, u.updated_at AS updatedAt
  FROM users u
  WHERE ${GROUP('role', 'role')} AND ${GROUP('team', 'team')}
    AND (@q IS NULL OR instr(lower(u.id), @q) > 0 OR instr(lower(coalesce(u.email, '')), @q) > 0 OR instr(lower(coalesce(u.name, '')), @q) > 0)
    AND (@afterT IS NULL OR u.created_at < @afterT OR (u.created_at = @afterT AND u.id > @afterId))
  ORDER BY u.created_at DESC, u.id LIMIT @limit`

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
