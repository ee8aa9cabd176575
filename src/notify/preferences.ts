import type { PreferenceRow, QuietHours } from '../store/directory.js'

/** The channel names preferences and templates use (the API's names). */
export type NotifyChannel = 'inbox' | 'email' | 'webhook'

/** What the preferences decide for one (recipient, channel). */
export interface ChannelDecision {
  enabled: boolean
  digest: 'none' | 'daily' | 'weekly'
  quietHours: QuietHours | null
  /** True when a mandatory topic skipped preferences, quiet hours and digests. */
  mandatory: boolean
}

/** The rule a preference row must match, as (user, topic, channel) with `*` wildcards. */
type Key = readonly [user: string, topic: string, channel: string]

/** The 8-step precedence of docs/notifications-basics.md, most specific first. */
export function precedence(userId: string, topic: string, channel: string): Key[] {
  return [
    [userId, topic, channel],
    [userId, topic, '*'],
    [userId, '*', channel],
    [userId, '*', '*'],
    ['*', topic, channel],
    ['*', topic, '*'],
    ['*', '*', channel],
    ['*', '*', '*'],
  ]
}

/** True when `topic` is mandatory: an exact name in the list, or under a listed prefix ending in '.'. */
export function isMandatoryTopic(topic: string, mandatory: readonly string[]): boolean {
  return mandatory.some((m) => (m.endsWith('.') ? topic.startsWith(m) : topic === m))
}

/** The first row matching (user, topic, channel) in precedence order, or null. */
export function matchPreference(
  rows: readonly PreferenceRow[],
  userId: string,
  topic: string,
  channel: string,
): PreferenceRow | null {
  for (const [u, t, c] of precedence(userId, topic, channel)) {
    const row = rows.find((r) => r.userId === u && r.topic === t && r.channel === c)
    if (row) return row
  }
  return null
}

/**
 * Quiet hours come from the first row with a `*` channel, in the same order. That row wins even
 * when its quiet_hours is null, so a user row can switch off a global window.
 */
export function quietHoursFor(rows: readonly PreferenceRow[], userId: string, topic: string): QuietHours | null {
  for (const [u, t, c] of precedence(userId, topic, '')) {
    if (c !== '*') continue
    const row = rows.find((r) => r.userId === u && r.topic === t && r.channel === '*')
    if (row) return row.quietHours
  }
  return null
}

/** Decides whether and how (digest, quiet hours) a channel reaches a recipient for a topic. */
export function decideChannel(
  rows: readonly PreferenceRow[],
  userId: string,
  topic: string,
  channel: NotifyChannel,
  mandatoryTopics: readonly string[],
): ChannelDecision {
  if (isMandatoryTopic(topic, mandatoryTopics)) return { enabled: true, digest: 'none', quietHours: null, mandatory: true }
  const row = matchPreference(rows, userId, topic, channel)
  return {
    enabled: row ? row.enabled : true,
    digest: row ? row.digest : 'none',
    quietHours: quietHoursFor(rows, userId, topic),
    mandatory: false,
  }
}

/** A preference field that would be stored and never read. */
export interface IneffectiveField {
  field: 'quiet_hours' | 'digest'
  message: string
}

/**
 * The fields of a preference row that docs/notifications-basics.md never reads, so a PUT can refuse them instead of
 * storing a setting that silently does nothing: quiet hours are read only from rows with a `*`
 * channel, and digests hold email only, so `digest` on an inbox or webhook row does nothing.
 * A null `quiet_hours` and a `none` digest are the stored defaults and always accepted.
 */
export function ineffectiveFields(p: { channel: string; digest?: string | undefined; quietHours?: QuietHours | null | undefined }): IneffectiveField[] {
  const out: IneffectiveField[] = []
  if (p.quietHours && p.channel !== '*') {
    out.push({
      field: 'quiet_hours',
      message: 'applies only to rows with channel "*" (quiet hours cover email and webhook together); set it on a row with channel "*"',
    })
  }
  if (p.digest !== undefined && p.digest !== 'none' && (p.channel === 'inbox' || p.channel === 'webhook')) {
    out.push({ field: 'digest', message: `applies only to email; set it on a row with channel "email" or "*", not "${p.channel}"` })
  }
  return out
}
