import type { Config } from '../config.js'
import type { Store } from '../store/index.js'
import type { NotifyChannel } from './preferences.js'

/** A warning in a notification's answer (`warnings`): a stable code and a sentence for people. */
export interface NotifyWarning {
  code: string
  message: string
}

/** How many template versions the start-up check reads at most (a page of 500 at a time). */
const MAX_TEMPLATES_SCANNED = 10_000
const PAGE = 500

const EMAIL_NOT_CONFIGURED = 'email is not configured (no POSTBOX_SMTP_URL): email deliveries end dead with channel_not_configured'

/**
 * The warnings of a send asking for `channels`: one `channel_not_configured` per requested
 * channel the server cannot deliver (today only email, without POSTBOX_SMTP_URL). The send is
 * still accepted (its other channels deliver, and the email rows record why they did not).
 */
export function sendWarnings(channels: readonly NotifyChannel[], config: Pick<Config, 'smtpUrl'>): NotifyWarning[] {
  return channels.includes('email') && !config.smtpUrl ? [{ code: 'channel_not_configured', message: `The notification asks for email, but ${EMAIL_NOT_CONFIGURED}.` }] : []
}

/**
 * What the server says once at start about channels that are referenced but not configured:
 * email templates, or default preferences (user `*`) enabling email, while POSTBOX_SMTP_URL is
 * unset. Reads at most MAX_TEMPLATES_SCANNED template versions.
 */
export async function unconfiguredChannelWarnings(store: Store, config: Pick<Config, 'smtpUrl'>): Promise<string[]> {
  if (config.smtpUrl) return []
  const referencedBy: string[] = []
  for (let after: number | undefined, read = 0; read < MAX_TEMPLATES_SCANNED; read += PAGE) {
    const page = await store.directory.listTemplates(undefined, { limit: PAGE, ...(after !== undefined ? { after } : {}) })
    if (page.some((t) => t.channel === 'email')) {
      referencedBy.push('templates')
      break
    }
    if (page.length < PAGE) break
    after = page[page.length - 1]!.id
  }
  const defaults = await store.directory.preferencesOfUser('*', { limit: 1000, offset: 0 })
  if (defaults.some((p) => p.channel === 'email' && p.enabled)) referencedBy.push('default preferences')
  return referencedBy.length > 0 ? [`${EMAIL_NOT_CONFIGURED}, yet ${referencedBy.join(' and ')} use email`] : []
}
