/** The directory's user list on PostgreSQL: `Async<UserListStore>` (store/user-list.ts is the contract). */
import type { Async } from '../contract.js'
import type { UserRow } from '../directory.js'
import type { UserListStore } from '../user-list.js'
import { parseJsonOr } from '../../lib/json.js'
import type { PgQueryable } from './queryable.js'

const GROUP = (kind: string, param: string) =>
  `(${param}::text IS NULL OR EXISTS (SELECT 1 FROM user_groups g WHERE g.kind = '${kind}' AND g.name = ${param} AND g.user_id = u.id))`

/**
 * The user list statement. `lower()` of a `COLLATE "C"` column folds ASCII only, as SQLite's
 * does; the needle is lowered by the caller (JavaScript), as on SQLite.
 */
export const PG_USER_LIST_SQL = `SELECT u.id, u.email, u.name, u.locale, u.timezone, u.roles, u.teams,
    u.created_at AS "createdAt", u.updated_at AS "updatedAt"
  FROM users u
  WHERE ${GROUP('role', '$1')} AND ${GROUP('team', '$2')}
    AND ($3::text IS NULL OR strpos(lower(u.id), $3) > 0 OR strpos(lower(coalesce(u.email, '')), $3) > 0
      OR strpos(lower(coalesce(u.name, '')), $3) > 0)
    AND ($4::bigint IS NULL OR u.created_at < $4 OR (u.created_at = $4 AND u.id > $5))
  ORDER BY u.created_at DESC, u.id LIMIT $6`

/** Creates the user list over a pool or a transaction's client. */
export function createPgUserListStore(q: PgQueryable): Async<UserListStore> {
  return {
    async list(f, slice) {
      const rows = await q.query<Omit<UserRow, 'roles' | 'teams'> & { roles: string; teams: string }>(PG_USER_LIST_SQL, [
        f.role,
        f.team,
        f.q === null ? null : f.q.toLowerCase(),
        slice.after?.createdAt ?? null,
        slice.after?.id ?? '',
        slice.limit < 0 ? null : slice.limit,
      ])
      return rows.rows.map((r) => ({ ...r, roles: parseJsonOr<string[]>(r.roles, []), teams: parseJsonOr<string[]>(r.teams, []) }))
    },
  }
}
