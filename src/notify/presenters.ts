import type { z } from '@hono/zod-openapi'
import type { PreferenceRow, SubscriptionRow, TemplateRow, UserRow } from '../store/directory.js'
import { toIso } from '../lib/clock.js'
import type { PreferenceOut, SubscriptionOut, TemplateOut, UserOut } from './schemas.js'

/** The API JSON of a user. */
export const userJson = (u: UserRow): z.infer<typeof UserOut> => ({
  id: u.id,
  email: u.email,
  name: u.name,
  locale: u.locale,
  timezone: u.timezone,
  roles: u.roles,
  teams: u.teams,
  created_at: toIso(u.createdAt),
  updated_at: toIso(u.updatedAt),
})

/** The API JSON of a subscription. */
export const subscriptionJson = (s: SubscriptionRow): z.infer<typeof SubscriptionOut> => ({
  topic: s.topic,
  principal: s.principal,
  enabled: s.enabled,
  created_at: toIso(s.createdAt),
})

/** The API JSON of a preference row. */
export const preferenceJson = (p: PreferenceRow): z.infer<typeof PreferenceOut> => ({
  user_id: p.userId,
  topic: p.topic,
  channel: p.channel,
  enabled: p.enabled,
  digest: p.digest,
  quiet_hours: p.quietHours,
  updated_at: toIso(p.updatedAt),
})

/** The API JSON of a template version. */
export const templateJson = (t: TemplateRow): z.infer<typeof TemplateOut> => ({
  id: t.id,
  topic: t.topic,
  channel: t.channel,
  locale: t.locale,
  version: t.version,
  subject: t.subject,
  body: t.body,
  format: t.format,
  active: t.active,
  created_at: toIso(t.createdAt),
})
