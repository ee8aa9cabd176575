/**
 * The directory on PostgreSQL: `Async<DirectoryStore>` (store/directory.ts is the contract and the
 * SQLite original; the rows are the same). Multi-statement writes run in one transaction
 * (`atomically`); what SQLite got from its single writer, PostgreSQL gets from row locks (the
 * user's upsert) and a per-(topic, channel, locale) advisory lock (template versions).
 */
import type { Async } from '../contract.js'
import type { DirectoryStore, MemberRow, PreferenceRow, QuietHours, SubscriptionKey, SubscriptionRow, TemplateRow, UserRow } from '../directory.js'
import { parseJsonOr } from '../../lib/json.js'
import { atomically } from './atomic.js'
import type { PgQueryable } from './queryable.js'

/** Up to this many recipients, a fan-out reads the listed users' preferences; above, the topic's (as store/directory.ts). */
const LISTED_USERS_MAX = 20_000

const USER_COLUMNS = `id, email, name, locale, timezone, roles, teams, created_at AS "createdAt", updated_at AS "updatedAt"`
const PREF_COLUMNS = `user_id AS "userId", topic, channel, enabled, digest, quiet_hours AS "quietHours", updated_at AS "updatedAt"`
const TEMPLATE_COLUMNS = `id, topic, channel, locale, version, subject, body, format, active, created_at AS "createdAt"`
const SUB_COLUMNS = `topic, principal, enabled, created_at AS "createdAt"`
/** SQLite's preference order (its primary key): rows are read from that index there. */
const PREF_ORDER = `ORDER BY user_id, topic, channel`

/** The PostgreSQL directory statements by name. */
export const PG_DIRECTORY_SQL = {
  // $9..$14 say which fields the caller gave: the others keep their stored value, in the one
  // statement that also locks the row (two nodes writing one user cannot interleave a read).
  upsertUser: `INSERT INTO users AS u (id, email, name, locale, timezone, roles, teams, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
    ON CONFLICT (id) DO UPDATE SET
      email = CASE WHEN $9::boolean THEN excluded.email ELSE u.email END,
      name = CASE WHEN $10::boolean THEN excluded.name ELSE u.name END,
      locale = CASE WHEN $11::boolean THEN excluded.locale ELSE u.locale END,
      timezone = CASE WHEN $12::boolean THEN excluded.timezone ELSE u.timezone END,
      roles = CASE WHEN $13::boolean THEN excluded.roles ELSE u.roles END,
      teams = CASE WHEN $14::boolean THEN excluded.teams ELSE u.teams END,
      updated_at = excluded.updated_at
    RETURNING ${USER_COLUMNS}, (xmax = 0) AS created`,
  getUser: `SELECT ${USER_COLUMNS} FROM users WHERE id = $1`,
  userByEmail: `SELECT ${USER_COLUMNS} FROM users WHERE lower(email) = lower($1::text COLLATE "C") ORDER BY created_at, id LIMIT 1`,
  deleteUser: `DELETE FROM users WHERE id = $1`,
  deleteGroups: `DELETE FROM user_groups WHERE user_id = $1`,
  insertGroups: `INSERT INTO user_groups (kind, name, user_id) SELECT g.kind, g.name, $1 FROM unnest($2::text[], $3::text[]) AS g(kind, name)
    ON CONFLICT DO NOTHING`,
  members: `SELECT u.id, u.email, u.name, u.locale, u.timezone FROM user_groups g JOIN users u ON u.id = g.user_id
    WHERE g.kind = $1 AND g.name = $2 ORDER BY g.user_id`,
  deleteUserSubscriptions: `DELETE FROM subscriptions WHERE principal = $1`,
  deleteUserPreferences: `DELETE FROM preferences WHERE user_id = $1`,
  putSubscription: `INSERT INTO subscriptions AS s (topic, principal, enabled, created_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (topic, principal) DO UPDATE SET enabled = excluded.enabled RETURNING ${SUB_COLUMNS}`,
  deleteSubscription: `DELETE FROM subscriptions WHERE topic = $1 AND principal = $2`,
  // Newest first, then key order, after the row ($1, $2, $3): the range starts at $1 in the index.
  allSubscriptions: `SELECT ${SUB_COLUMNS} FROM subscriptions
    WHERE created_at <= $1 AND (created_at < $1 OR (topic, principal) > ($2, $3))
    ORDER BY created_at DESC, topic, principal LIMIT $4`,
  subscriptionsOfTopic: `SELECT ${SUB_COLUMNS} FROM subscriptions
    WHERE topic = $2 AND created_at <= $1 AND (created_at < $1 OR principal > $3)
    ORDER BY created_at DESC, principal LIMIT $4`,
  subscribers: `SELECT principal FROM subscriptions WHERE topic = $1 AND enabled = 1 ORDER BY created_at, principal`,
  putPreference: `INSERT INTO preferences (user_id, topic, channel, enabled, digest, quiet_hours, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (user_id, topic, channel) DO UPDATE SET enabled = excluded.enabled, digest = excluded.digest,
      quiet_hours = excluded.quiet_hours, updated_at = excluded.updated_at`,
  preferencesOfUser: `SELECT ${PREF_COLUMNS} FROM preferences WHERE user_id = $1 ORDER BY updated_at DESC, topic, channel LIMIT $2 OFFSET $3`,
  preferencesFor: `SELECT ${PREF_COLUMNS} FROM preferences WHERE user_id IN ($1, '*') AND topic IN ($2, '*') ${PREF_ORDER}`,
  globalPreferencesFor: `SELECT ${PREF_COLUMNS} FROM preferences WHERE user_id = '*' AND topic IN ($1, '*') ${PREF_ORDER}`,
  // A fan-out's own rows, read at once: the lookup it returns is synchronous.
  listedUsersPreferences: `SELECT ${PREF_COLUMNS} FROM preferences WHERE user_id = ANY($1::text[]) AND topic IN ($2, '*') AND user_id <> '*' ${PREF_ORDER}`,
  topicUsersPreferences: `SELECT ${PREF_COLUMNS} FROM preferences WHERE topic IN ($1, '*') AND user_id <> '*' ${PREF_ORDER}`,
  lockTemplateKey: `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(1) || $2 || chr(1) || $3, 7))`,
  insertTemplate: `INSERT INTO templates (topic, channel, locale, version, subject, body, format, active, created_at)
    SELECT $1::text, $2::text, $3::text, coalesce(max(version), 0) + 1, $4::text, $5::text, $6::text, $7::integer, $8::bigint FROM templates WHERE topic = $1 AND channel = $2 AND locale = $3
    RETURNING ${TEMPLATE_COLUMNS}`,
  templates: `SELECT ${TEMPLATE_COLUMNS} FROM templates WHERE id < $1 ORDER BY id DESC LIMIT $2`,
  templatesByTopic: `SELECT ${TEMPLATE_COLUMNS} FROM templates WHERE topic = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
  activeTemplates: `SELECT ${TEMPLATE_COLUMNS} FROM templates WHERE topic = $1 AND channel = $2 AND active = 1
    ORDER BY locale, version DESC`,
} as const

type RawUser = Omit<UserRow, 'roles' | 'teams'> & { roles: string; teams: string }
type RawPref = Omit<PreferenceRow, 'enabled' | 'quietHours'> & { enabled: number; quietHours: string | null }
type RawTemplate = Omit<TemplateRow, 'active'> & { active: number }
type RawSub = Omit<SubscriptionRow, 'enabled'> & { enabled: number }

const mapUser = (r: RawUser): UserRow => ({
  id: r.id,
  email: r.email,
  name: r.name,
  locale: r.locale,
  timezone: r.timezone,
  roles: parseJsonOr<string[]>(r.roles, []),
  teams: parseJsonOr<string[]>(r.teams, []),
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
})
const mapPref = (r: RawPref): PreferenceRow => ({ ...r, enabled: r.enabled === 1, quietHours: parseJsonOr<QuietHours | null>(r.quietHours, null) })
const mapTemplate = (r: RawTemplate): TemplateRow => ({ ...r, active: r.active === 1 })
const mapSub = (r: RawSub): SubscriptionRow => ({ ...r, enabled: r.enabled === 1 })

/** SQLite's LIMIT -1 (every row) is PostgreSQL's LIMIT NULL. */
export const pgLimit = (limit: number): number | null => (limit < 0 ? null : limit)

/** A key before every subscription: the first page starts after it. */
const FIRST_SUBSCRIPTION: SubscriptionKey = { createdAt: Number.MAX_SAFE_INTEGER, topic: '', principal: '' }

/** Groups preference rows by user, keeping their order. */
function byUser(rows: readonly PreferenceRow[]): Map<string, PreferenceRow[]> {
  const out = new Map<string, PreferenceRow[]>()
  for (const r of rows) {
    const list = out.get(r.userId)
    if (list) list.push(r)
    else out.set(r.userId, [r])
  }
  return out
}

/** Creates the directory store over a pool or a transaction's client. */
export function createPgDirectoryStore(q: PgQueryable): Async<DirectoryStore> {
  const S = PG_DIRECTORY_SQL
  const rows = async <R>(sql: string, values: readonly unknown[]): Promise<R[]> => (await q.query<R>(sql, values)).rows

  return {
    putUser: (id, input, now) =>
      atomically(q, async (c) => {
        const given = (k: keyof typeof input) => input[k] !== undefined
        const list = (v: string[] | undefined) => JSON.stringify([...new Set(v ?? [])])
        const r = (
          await c.query<RawUser & { created: boolean }>(S.upsertUser, [
            id,
            input.email ?? null,
            input.name ?? null,
            input.locale ?? null,
            input.timezone ?? null,
            list(input.roles),
            list(input.teams),
            now,
            given('email'),
            given('name'),
            given('locale'),
            given('timezone'),
            given('roles'),
            given('teams'),
          ])
        ).rows[0]!
        const user = mapUser(r)
        // user_groups mirrors roles/teams so role:/team: selectors are one indexed lookup.
        if (r.created || given('roles') || given('teams')) {
          if (!r.created) await c.query(S.deleteGroups, [id])
          const kinds = [...user.roles.map(() => 'role'), ...user.teams.map(() => 'team')]
          if (kinds.length > 0) await c.query(S.insertGroups, [id, kinds, [...user.roles, ...user.teams]])
        }
        return { user, created: r.created }
      }),
    getUser: async (id) => {
      const r = (await rows<RawUser>(S.getUser, [id]))[0]
      return r ? mapUser(r) : null
    },
    userByEmail: async (email) => {
      const r = (await rows<RawUser>(S.userByEmail, [email]))[0]
      return r ? mapUser(r) : null
    },
    deleteUser: (id) =>
      atomically(q, async (c) => {
        const n = (await c.query(S.deleteUser, [id])).rowCount ?? 0
        if (n > 0) {
          await c.query(S.deleteUserSubscriptions, [`user:${id}`])
          await c.query(S.deleteUserPreferences, [id])
        }
        return n > 0
      }),
    members: (kind, name) => rows<MemberRow>(S.members, [kind, name]),
    putSubscription: async (topic, principal, now, enabled = true) =>
      mapSub((await rows<RawSub>(S.putSubscription, [topic, principal, enabled ? 1 : 0, now]))[0]!),
    deleteSubscription: async (topic, principal) => ((await q.query(S.deleteSubscription, [topic, principal])).rowCount ?? 0) > 0,
    async listSubscriptions(topic, { limit, after } = { limit: -1 }) {
      const from = after ?? FIRST_SUBSCRIPTION
      const r = await rows<RawSub>(topic === undefined ? S.allSubscriptions : S.subscriptionsOfTopic, [
        from.createdAt,
        topic ?? from.topic,
        from.principal,
        pgLimit(limit),
      ])
      return r.map(mapSub)
    },
    subscribers: async (topic) => (await rows<{ principal: string }>(S.subscribers, [topic])).map((r) => r.principal),
    async putPreference(row) {
      await q.query(S.putPreference, [
        row.userId,
        row.topic,
        row.channel,
        row.enabled ? 1 : 0,
        row.digest,
        row.quietHours ? JSON.stringify(row.quietHours) : null,
        row.updatedAt,
      ])
      return row
    },
    preferencesOfUser: async (userId, { limit, offset } = { limit: -1, offset: 0 }) =>
      (await rows<RawPref>(S.preferencesOfUser, [userId, pgLimit(limit), offset])).map(mapPref),
    preferencesFor: async (userId, topic) => (await rows<RawPref>(S.preferencesFor, [userId, topic])).map(mapPref),
    async preferencesForTopic(topic, userIds) {
      const [global, own] = await Promise.all([
        rows<RawPref>(S.globalPreferencesFor, [topic]),
        userIds.length <= LISTED_USERS_MAX
          ? rows<RawPref>(S.listedUsersPreferences, [userIds, topic])
          : rows<RawPref>(S.topicUsersPreferences, [topic]),
      ])
      const g = global.map(mapPref)
      const mine = byUser(own.map(mapPref))
      return (userId) => {
        const m = mine.get(userId)
        return m ? [...m, ...g] : g
      }
    },
    putTemplate: (input, now) =>
      atomically(q, async (c) => {
        await c.query(S.lockTemplateKey, [input.topic, input.channel, input.locale])
        const r = await c.query<RawTemplate>(S.insertTemplate, [
          input.topic,
          input.channel,
          input.locale,
          input.subject,
          input.body,
          input.format,
          input.active ? 1 : 0,
          now,
        ])
        return mapTemplate(r.rows[0]!)
      }),
    async listTemplates(topic, { limit, after } = { limit: -1 }) {
      const before = after ?? Number.MAX_SAFE_INTEGER
      const r =
        topic === undefined
          ? await rows<RawTemplate>(S.templates, [before, pgLimit(limit)])
          : await rows<RawTemplate>(S.templatesByTopic, [topic, before, pgLimit(limit)])
      return r.map(mapTemplate)
    },
    activeTemplates: async (topic, channel) => (await rows<RawTemplate>(S.activeTemplates, [topic, channel])).map(mapTemplate),
  }
}
