import { unwrap } from '../shared/api'
import { AttemptsChart } from '../shared/chart'
import { duration } from '../shared/format'
import { href, navigate, useLoad, useRoute, useSession } from '../shared/hooks'
import { Table } from '../shared/table'
import { Badge, Loading, Section, Time } from '../shared/ui'

/**
 * The chart's time ranges, each with a bucket that keeps it under the API's 1,500 buckets
 * (GET /v1/stats/timeseries): 60, 1,440, 168 and 120 points.
 */
export const RANGES = [
  { key: '1h', label: 'last hour', hours: 1, bucket: '1m', per: 'minute' },
  { key: '24h', label: 'last 24 hours', hours: 24, bucket: '1m', per: 'minute' },
  { key: '7d', label: 'last 7 days', hours: 24 * 7, bucket: '1h', per: 'hour' },
  { key: '30d', label: 'last 30 days', hours: 24 * 30, bucket: '6h', per: '6 hours' },
] as const

/** Deliveries by outcome over a chosen range (24 h by default), queue depth by status, oldest pending, failing endpoints. */
export function OverviewPage() {
  const { api } = useSession()
  const { query } = useRoute()
  const range = RANGES.find((r) => r.key === query.get('range')) ?? RANGES[1]
  const stats = useLoad(() => unwrap(api.GET('/v1/stats')), [])
  const series = useLoad(() => {
    // Both ends from this clock: a browser behind the server's still asks for the range's bucket count.
    const until = Date.now()
    const since = new Date(until - range.hours * 3_600_000).toISOString()
    return unwrap(api.GET('/v1/stats/timeseries', { params: { query: { bucket: range.bucket, since, until: new Date(until).toISOString() } } }))
  }, [range.key])
  const actions = (
    <>
      <span class="segmented" role="group" aria-label="Time range">
        {RANGES.map((r) => (
          <button key={r.key} type="button" class="btn btn-plain" aria-pressed={r.key === range.key} onClick={() => navigate(r.key === '24h' ? '/overview' : `/overview?range=${r.key}`)}>
            {r.key}
          </button>
        ))}
      </span>
      <button type="button" class="btn btn-plain" onClick={() => (stats.reload(), series.reload())}>
        Refresh
      </button>
    </>
  )
  return (
    <>
      <Section title={`Deliveries per ${range.per}, ${range.label}`} actions={actions}>
        <Loading state={series}>{(s) => <AttemptsChart series={s} title={`Attempts per ${range.per} by outcome, ${range.label}`} />}</Loading>
      </Section>
      <Loading state={stats}>
        {(s) => (
          <>
            <Section title="Queue">
              <ul class="tiles">
                {(['pending', 'in_flight', 'success', 'dead', 'cancelled'] as const).map((k) => (
                  <li key={k} class="tile">
                    <a href={href(`/deliveries?status=${k}`)}>
                      <span class="tile-n">{s.deliveries[k]}</span>
                      <span class="tile-l">{k.replace('_', ' ')}</span>
                    </a>
                  </li>
                ))}
                <li class="tile">
                  <span class="tile-n">{s.oldest_pending_age_seconds === null ? '—' : duration(s.oldest_pending_age_seconds)}</span>
                  <span class="tile-l">oldest pending</span>
                </li>
              </ul>
            </Section>
            <Section title={`Failing endpoints (${s.failing_endpoints})`}>
              {s.failing_endpoints === 0 ? (
                <p class="muted">Every endpoint is healthy.</p>
              ) : (
                <Table headings={['Endpoint', 'Circuit', 'Failures', 'Pending', 'Last success']}>
                  {s.endpoints
                    .filter((e) => e.failing)
                    .map((e) => (
                      <tr key={e.id}>
                        <td>
                          <a href={href(`/endpoints/${e.id}`)}>{e.url}</a>
                          {e.disabled && <div class="muted small">disabled: {e.disabled_reason}</div>}
                        </td>
                        <td>
                          <Badge value={e.disabled ? 'disabled' : e.circuit} />
                        </td>
                        <td>{e.consecutive_failures}</td>
                        <td>{e.pending}</td>
                        <td>
                          <Time iso={e.last_success_at} />
                        </td>
                      </tr>
                    ))}
                </Table>
              )}
            </Section>
          </>
        )}
      </Loading>
    </>
  )
}
