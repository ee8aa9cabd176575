import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import type { Schemas } from './api'

type Series = Schemas['StatsTimeseries']

const OUTCOMES = [
  { key: 'success', label: 'Delivered', stroke: '#1a7f37', fill: 'rgba(26,127,55,0.15)' },
  { key: 'retry', label: 'Failed, will retry', stroke: '#9a6700', fill: 'rgba(154,103,0,0.15)' },
  { key: 'dead', label: 'Failed for good', stroke: '#cf222e', fill: 'rgba(207,34,46,0.15)' },
] as const

/** "minute", "hour", "5 min". */
function bucketLabel(seconds: number): string {
  if (seconds === 60) return 'minute'
  if (seconds === 3600) return 'hour'
  if (seconds === 86_400) return 'day'
  return seconds >= 3600 ? `${seconds / 3600} h` : seconds >= 60 ? `${seconds / 60} min` : `${seconds} s`
}

/**
 * Attempts per bucket by outcome, drawn by uPlot on a canvas. The figure's caption carries the
 * totals in words, so the chart is not the only way to read them.
 */
export function AttemptsChart(props: { series: Series; title: string }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = box.current
    if (!el) return
    const s = props.series
    const xs = s.data.map((b) => Date.parse(b.start) / 1000)
    const data: uPlot.AlignedData = [xs, ...OUTCOMES.map((o) => s.data.map((b) => b[o.key]))]
    const width = Math.max(320, el.clientWidth || 720)
    const plot = new uPlot(
      {
        width,
        height: 220,
        series: [{}, ...OUTCOMES.map((o) => ({ label: o.label, stroke: o.stroke, fill: o.fill, width: 1.5, points: { show: false } }))],
        axes: [{}, { label: `per ${bucketLabel(s.bucket_seconds)}`, size: 50 }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        cursor: { drag: { x: false, y: false } },
      },
      data,
      el,
    )
    const resize = (): void => plot.setSize({ width: Math.max(320, el.clientWidth), height: 220 })
    addEventListener('resize', resize)
    return () => {
      removeEventListener('resize', resize)
      plot.destroy()
    }
  }, [props.series])
  const t = props.series.totals
  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={`${props.title}: ${t.success} delivered, ${t.retry} failed and retried, ${t.dead} failed for good`} />
      <figcaption class="muted">
        {props.title}: {t.success} delivered, {t.retry} failed and retried, {t.dead} failed for good
        {t.avg_duration_ms !== null ? `, ${t.avg_duration_ms} ms on average` : ''}.
      </figcaption>
    </figure>
  )
}
