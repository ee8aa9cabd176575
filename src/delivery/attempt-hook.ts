import type { Log } from '../log.js'
import type { ClaimedDelivery, SettleInput, SettleResult } from '../store/deliveries.js'
import { requestIdOf } from '../store/requests.js'
import type { AttemptHook, AttemptReport } from './channel.js'

/**
 * Calls `hook` once per attempt of a settled batch (rows without an attempt, released claims,
 * sent nothing and are skipped). Runs after the commit, outside any transaction. A hook that
 * throws or rejects is logged and ignored: it never changes an outcome, nor the next report.
 */
export function reportAttempts(hook: AttemptHook, batch: readonly SettleInput[], rows: readonly ClaimedDelivery[], settled: readonly SettleResult[], log: Log): void {
  batch.forEach((r, i) => {
    const a = r.attempt
    const d = rows[i]
    if (!a || !d || r.outcome.kind === 'release') return
    const s = settled[i]
    const status = s?.result === 'settled' ? s.status : null
    const report: AttemptReport = {
      delivery_id: d.id,
      channel: d.channel,
      attempt: s?.result === 'settled' && r.outcome.kind !== 'snooze' ? s.attempts : d.attempts,
      outcome: r.outcome.kind === 'retry' && status === 'dead' ? 'dead' : r.outcome.kind,
      status,
      status_code: a.statusCode ?? null,
      error: a.error ?? null,
      duration_ms: Math.max(0, Math.round(a.durationMs)),
      started_at: a.startedAt,
      event_id: d.eventId,
      endpoint_id: d.endpointId,
      notification_id: d.notificationId,
      request_id: d.channel === 'request' ? requestIdOf(d.id) : null,
    }
    try {
      const p = hook(report)
      if (p && typeof (p as Promise<void>).catch === 'function') (p as Promise<void>).catch((err: unknown) => log.warn({ err, delivery: d.id }, 'onAttempt hook rejected; ignored'))
    } catch (err) {
      log.warn({ err, delivery: d.id }, 'onAttempt hook threw; ignored')
    }
  })
}
