import type { EndpointDisabledHandler } from '../delivery/health.js'
import type { WebhookService } from './types.js'

/**
 * The sender's disable hook: publishes `postbox.endpoint.disabled` with `{endpoint_id, url,
 * reason}` to the endpoints of its application that subscribe to it. It runs inside the disabling
 * transaction (`s`), so the operational event commits together with the disable.
 */
export function publishEndpointDisabled(webhooks: Pick<WebhookService, 'publish'>): EndpointDisabledHandler {
  return async (s, endpoint, reason) => {
    // To the disabled endpoint's own application: another tenant must not learn of it.
    await webhooks.publish('postbox.endpoint.disabled', { endpoint_id: endpoint.id, url: endpoint.url, reason }, { tx: s, ...(endpoint.appId !== undefined ? { appId: endpoint.appId } : {}) })
  }
}
