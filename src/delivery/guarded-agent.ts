import type { lookup as dnsLookup } from 'node:dns'
import { createRequire } from 'node:module'
import type { Agent, buildConnector } from 'undici'
import { createAddressPolicy, DestinationNotAllowedError, guardedLookup, literalIp } from './ssrf.js'

/**
 * An undici Agent (keep-alive pools per origin) whose connect step resolves the host through the
 * SSRF guard and connects to the checked address (docs/requests.md, destination safety): one
 * lookup, so no DNS rebinding. Literal IPs are checked without a lookup. `allowNetworks` opens
 * chosen non-public ranges (POSTBOX_ALLOW_NETWORKS).
 */
export function createGuardedAgent(allowNetworks: readonly string[], resolve?: typeof dnsLookup): Agent {
  const undici = createRequire(import.meta.url)('undici') as typeof import('undici')
  const policy = createAddressPolicy(allowNetworks)
  const baseConnect = undici.buildConnector({ lookup: guardedLookup(policy, resolve), timeout: 10_000 } as buildConnector.BuildOptions)
  const connect: buildConnector.connector = (opts, cb) => {
    const ip = literalIp(opts.hostname)
    if (ip !== null && !policy.isAllowed(ip)) return cb(new DestinationNotAllowedError(ip), null)
    return baseConnect(opts, cb)
  }
  return new undici.Agent({ connect, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000, pipelining: 1 })
}

/** Closes `agent`, letting pooled requests finish for up to `graceMs`, then destroys the sockets. */
export async function closeAgent(agent: Agent, graceMs: number): Promise<void> {
  // A connect still in progress (stop() already settled its row) must not hold the close.
  let timer: NodeJS.Timeout | undefined
  const graceful = await Promise.race([
    agent.close().then(() => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs))),
  ])
  clearTimeout(timer)
  if (!graceful) await agent.destroy()
}

/** A guarded agent made at its first use, so an idle server never loads undici (docs/performance.md). */
export function lazyGuardedAgent(allowNetworks: readonly string[], resolve?: typeof dnsLookup): { get(): Agent; close(graceMs: number): Promise<void> } {
  let agent: Agent | null = null
  return {
    get: () => (agent ??= createGuardedAgent(allowNetworks, resolve)),
    close: async (graceMs) => {
      if (agent !== null) await closeAgent(agent, graceMs)
    },
  }
}
