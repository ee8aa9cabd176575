import { unwrap } from '../shared/api'
import { AttemptsChart } from '../shared/chart'
import { duration } from '../shared/format'
import { href, useLoad, useSession } from '../shared/hooks'
import { Table } from '../shared/table'
import { Badge, Loading, Section, Time } from '../shared/ui'

/** Deliveries per minute over 24 h, queue depth by status, oldest pending, failing endpoints. */
export function OverviewPage() {
  const { api } = useSession()
  const stats = useLoad(() => unwrap(api.GET('/v1/stats')), [])
  const series = useLoad(() => unwrap(api.GET('/v1/stats/timeseries', { params: { query: { bucket: '1m' } } })), [])
  return (
    <>
      <Section title="Deliveries per minute, last 24 hours" actions={<button type="button" class="btn btn-plain" onClick={() => (stats.reload(), series.reload())}>Refresh</button>}>
        <Loading state={series}>{(s) => <AttemptsChart series={s} title="Attempts per minute by outcome" />}</Loading>
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
