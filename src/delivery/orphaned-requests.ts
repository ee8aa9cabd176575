import type { Store } from '../store/index.js'
import type { ClaimedDelivery, SettleResult } from '../store/deliveries.js'

/** The application every key may write to; it is never deleted. */
const DEFAULT_APP = 'default'

/**
 * Ends as `cancelled` (error `app_deleted`) the durable requests this settle left pending whose
 * application was deleted while they were in flight (issue #36, finding 5). Deleting an
 * application cancels its pending requests at once (store requests.cancelForApp) but never one
 * on the wire; that one's attempt is settled and logged as usual, and then, in the same
 * transaction as the settle, cancelled here instead of being retried. A webhook delivery in the
 * same position ends the same way at its next claim (its endpoint is deleted with the application).
 * A delete committed after this settle cancels the row itself, as it is pending by then.
 * Returns how many rows it cancelled.
 */
export async function cancelOrphanedRequests(
  s: Pick<Store, 'apps' | 'requests'>, rows: readonly ClaimedDelivery[], settled: readonly SettleResult[], now: number,
): Promise<number> {
  const apps = new Set<string>()
  settled.forEach((r, i) => {
    const d = rows[i]!
    if (d.channel === 'request' && d.appId !== DEFAULT_APP && r.result === 'settled' && r.status === 'pending') apps.add(d.appId)
  })
  let cancelled = 0
  for (const appId of apps) if ((await s.apps.get(appId)) === null) cancelled += await s.requests.cancelForApp(appId, now)
  return cancelled
}
