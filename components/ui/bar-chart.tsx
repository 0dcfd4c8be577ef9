'use client'

import { useState } from 'react'
import { formatCount } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'

type Point = { t: string; count: number }

type BarChartProps = { points: readonly Point[]; bucket?: 'hour' | 'day' | 'minute'; emptyLabel?: string }

const niceMax = (n: number) => {
  if (n <= 5) return Math.max(n, 1)
  const p = 10 ** Math.floor(Math.log10(n))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= n) return m * p
  return 10 * p
}

const WIDTH = 1000
const HEIGHT = 120

/**
 * Arrivals over time as SVG bars. The SVG stretches to its container (preserveAspectRatio="none"), so all
 * text lives in HTML around it, where glyphs are not distorted.
 */
export function BarChart({ points, bucket = 'hour', emptyLabel = 'No arrivals in this range' }: BarChartProps) {
  const time = useTimeFormat()
  const [hover, setHover] = useState<number | null>(null)
  const max = niceMax(Math.max(0, ...points.map((p) => p.count)))
  const n = points.length
  const slot = n > 0 ? WIDTH / n : 0
  const bar = Math.max(slot * 0.78, 1)
  const total = points.reduce((a, p) => a + p.count, 0)
  const hovered = hover !== null ? points[hover] : undefined
  // "11-30 14:00" for hourly buckets, "11-30" for daily ones.
  const format = (t: string) => (bucket === 'day' ? time.absolute(t).slice(5, 10) : time.absolute(t).slice(5, 16))
  const label = (i: number) => (points[i] ? format(points[i].t) : '')

  return (
    <div className="grid grid-cols-[2.5rem_minmax(0,1fr)] gap-x-2">
      <div className="flex h-[120px] flex-col justify-between text-right text-[10px] text-zinc-500 tabular-nums">
        <span>{formatCount(max)}</span>
        <span>{formatCount(max / 2)}</span>
        <span>0</span>
      </div>
      <div className="relative h-[120px] min-w-0">
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="none" className="block h-full w-full" role="img" aria-label={`${formatCount(total)} arrivals`} onMouseLeave={() => setHover(null)}>
          {[0, 0.5, 1].map((f) => (
            <line key={f} x1={0} x2={WIDTH} y1={(HEIGHT - 1) * (1 - f) + 0.5} y2={(HEIGHT - 1) * (1 - f) + 0.5} className="stroke-zinc-200" strokeWidth={1} vectorEffect="non-scaling-stroke" />
          ))}
          {points.map((p, i) => {
            const h = p.count > 0 ? Math.max((p.count / max) * (HEIGHT - 2), 1.5) : 0
            return (
              <g key={`${p.t}-${i}`} onMouseEnter={() => setHover(i)}>
                <rect x={i * slot} y={0} width={slot} height={HEIGHT} className="fill-transparent" />
                <rect x={i * slot + (slot - bar) / 2} y={HEIGHT - 1 - h} width={bar} height={h} className={hover === i ? 'fill-brand' : 'fill-brand/55'} />
              </g>
            )
          })}
        </svg>
        {n === 0 || total === 0 ? <p className="absolute inset-0 flex items-center justify-center text-zinc-500">{emptyLabel}</p> : null}
        {hovered && (
          <div className="pointer-events-none absolute top-0 right-0 rounded border border-zinc-200 bg-white/95 px-2 py-0.5 text-xs shadow-xs tabular-nums">
            {bucket === 'day' ? time.absolute(hovered.t).slice(0, 10) : time.absolute(hovered.t).slice(0, 16)} · <span className="font-semibold">{formatCount(hovered.count)}</span>
          </div>
        )}
      </div>
      <div />
      <div className="mt-1 flex justify-between text-[10px] text-zinc-500 tabular-nums">
        <span>{label(0)}</span>
        <span>{label(Math.floor((n - 1) / 2))}</span>
        <span>{label(n - 1)}</span>
      </div>
    </div>
  )
}
