import { formatCount } from '@/lib/client/format'

type SparklineProps = { values: readonly number[] | undefined; width?: number; height?: number; label?: string; gap?: number }

/** Tiny inline bars (one per bucket, oldest first); scaled to its own maximum, so shape, not size, compares. */
export function Sparkline({ values, width = 96, height = 20, label = 'last 24 hours, hourly', gap = 1 }: SparklineProps) {
  const data = values && values.length > 0 ? values : null
  if (!data) return <svg width={width} height={height} aria-hidden className="block" />
  const max = Math.max(...data, 1)
  const bar = Math.max((width - gap * (data.length - 1)) / data.length, 1)
  const total = data.reduce((a, b) => a + b, 0)
  return (
    <svg width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${formatCount(total)} arrivals, ${label}`} className="block">
      <title>{`${formatCount(total)} in the ${label}`}</title>
      <line x1={0} x2={width} y1={height - 0.5} y2={height - 0.5} className="stroke-zinc-200" strokeWidth={1} />
      {data.map((v, i) => {
        const h = v > 0 ? Math.max((v / max) * (height - 1), 1.5) : 0
        return <rect key={i} x={i * (bar + gap)} y={height - h} width={bar} height={h} rx={0.5} className={v > 0 ? 'fill-brand/70' : 'fill-transparent'} />
      })}
    </svg>
  )
}
