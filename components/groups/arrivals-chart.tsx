'use client'

import { useEffect, useRef, useState } from 'react'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { absoluteTime, formatCount } from '@/lib/client/format'
import { useDarkMode, useTimeFormat } from '@/lib/client/use-display-prefs'
import type { ArrivalBucketDto, GroupDetailDto } from '@/lib/shared/schemas/group'

export type ChartZoom = { from: string; to: string }

type ArrivalsChartProps = {
  points: readonly ArrivalBucketDto[]
  bucket: GroupDetailDto['bucket']
  /** The range the messages below are limited to; the chart shows it zoomed in. */
  zoom: ChartZoom | null
  onZoom: (zoom: ChartZoom | null) => void
}

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const
const HEIGHT = 150

/**
 * The palette's colours as they stand (app/globals.css mirrors them in the dark) for the canvas, which takes no CSS
 * variables: a probe element resolves each to a colour the canvas parses.
 */
function paletteColours(element: HTMLElement) {
  const probe = document.createElement('span')
  element.appendChild(probe)
  const resolve = (css: string) => {
    probe.style.color = css
    return getComputedStyle(probe).color
  }
  const colours = {
    axis: resolve('var(--color-zinc-500)'),
    grid: resolve('var(--color-zinc-100)'),
    ticks: resolve('var(--color-zinc-200)'),
    bar: resolve('color-mix(in srgb, var(--color-brand) 60%, transparent)'),
  }
  probe.remove()
  return colours
}

const label = (bucket: GroupDetailDto['bucket'], ms: number, zone: string) => {
  const text = absoluteTime(new Date(ms).toISOString(), zone)
  return bucket === 'day' ? text.slice(0, 10) : text.slice(0, 16)
}

/**
 * A group's arrivals per bucket on uPlot (a canvas time-series chart of about 50 kB without dependencies): axes, the
 * bucket under the pointer with its count, and a drag across buckets to zoom in, which limits the messages below to
 * those buckets (whole buckets: `from` a bucket's start, `to` the end of the last one). Double-click or "Reset zoom"
 * zooms out. uPlot draws only in the browser; the server renders the frame at the chart's height.
 */
export function ArrivalsChart({ points, bucket, zoom, onZoom }: ArrivalsChartProps) {
  const time = useTimeFormat()
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | null>(null)
  const latest = useRef({ onZoom, bucket })
  const [hover, setHover] = useState<number | null>(null)
  const total = points.reduce((sum, p) => sum + p.count, 0)
  const dark = useDarkMode()

  useEffect(() => {
    latest.current = { onZoom, bucket }
  })

  useEffect(() => {
    const element = box.current
    if (!element) return
    // A closing point at the end of the last bucket: bars are drawn from their bucket's start (align 1).
    const step = BUCKET_MS[bucket] / 1000
    const xs = points.map((p) => new Date(p.t).getTime() / 1000)
    if (xs.length > 0) xs.push(xs[xs.length - 1] + step)
    const ys: (number | null)[] = [...points.map((p) => p.count), null]
    const colour = paletteColours(element)
    const options: uPlot.Options = {
      width: element.clientWidth,
      height: HEIGHT,
      legend: { show: false },
      padding: [8, 20, 0, 0],
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max ?? 0, 1) * 1.1] } },
      axes: [
        { stroke: colour.axis, grid: { stroke: colour.grid }, ticks: { stroke: colour.ticks }, font: '10px system-ui, sans-serif' },
        { stroke: colour.axis, grid: { stroke: colour.grid }, ticks: { show: false }, font: '10px system-ui, sans-serif', size: 40, values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? formatCount(t) : '')) },
      ],
      series: [
        {},
        { label: 'Arrivals', stroke: colour.bar, fill: colour.bar, width: 0, paths: uPlot.paths.bars?.({ size: [0.8, Infinity], align: 1 }), points: { show: false } },
      ],
      cursor: {
        y: false,
        points: { show: false },
        drag: { x: true, y: false, setScale: false },
        // Double-click zooms out through onZoom, not uPlot's own reset.
        bind: { dblclick: () => () => null },
      },
      hooks: {
        // The bucket under the pointer (uPlot's own index snaps to the nearest bucket start instead).
        setCursor: [
          (u) => {
            const left = u.cursor.left ?? -1
            const index = left < 0 || xs.length === 0 ? -1 : Math.floor((u.posToVal(left, 'x') - xs[0]) / step)
            setHover(index >= 0 && index < points.length ? index : null)
          },
        ],
        setSelect: [
          (u) => {
            if (u.select.width < 2) return
            const ms = BUCKET_MS[latest.current.bucket]
            const from = Math.floor((u.posToVal(u.select.left, 'x') * 1000) / ms) * ms
            const to = Math.max(Math.ceil((u.posToVal(u.select.left + u.select.width, 'x') * 1000) / ms) * ms, from + ms)
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false)
            latest.current.onZoom({ from: new Date(from).toISOString(), to: new Date(to).toISOString() })
          },
        ],
      },
    }
    const chart = new uPlot(options, [xs, ys], element)
    plot.current = chart
    const over = chart.over
    const reset = () => latest.current.onZoom(null)
    over.addEventListener('dblclick', reset)
    const resize = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height: HEIGHT }))
    resize.observe(element)
    return () => {
      resize.disconnect()
      over.removeEventListener('dblclick', reset)
      chart.destroy()
      plot.current = null
    }
    // Drawn again in the other theme's colours when it changes.
  }, [points, bucket, dark])

  // The zoom lives in the URL: applied on every change, and when the chart is drawn anew with it set.
  useEffect(() => {
    const chart = plot.current
    if (!chart || points.length === 0) return
    const first = new Date(points[0].t).getTime() / 1000
    const last = new Date(points[points.length - 1].t).getTime() / 1000 + BUCKET_MS[bucket] / 1000
    const min = zoom ? Math.max(new Date(zoom.from).getTime() / 1000, first) : first
    const max = zoom ? Math.min(new Date(zoom.to).getTime() / 1000, last) : last
    chart.setScale('x', max > min ? { min, max } : { min: first, max: last })
  }, [zoom, points, bucket, dark])

  const hovered = hover !== null ? points[hover] : undefined
  return (
    <div className="relative">
      <div ref={box} className="min-w-0" style={{ height: HEIGHT }} role="img" aria-label={`${formatCount(total)} arrivals per ${bucket}; drag across the chart to show the messages of those ${bucket}s`} data-testid="arrivals-chart" />
      {total === 0 && <p className="pointer-events-none absolute inset-0 flex items-center justify-center text-zinc-500">No arrivals in this range</p>}
      {hovered && (
        <div className="pointer-events-none absolute top-0 right-2 rounded border border-zinc-200 bg-white/95 px-2 py-0.5 text-xs shadow-xs tabular-nums" data-testid="chart-hover">
          {label(bucket, new Date(hovered.t).getTime(), time.zone)} · <span className="font-semibold">{formatCount(hovered.count)}</span>
        </div>
      )}
      <p className="mt-1 flex items-center gap-2 text-[11px] text-zinc-500">
        {zoom ? (
          <>
            <span data-testid="chart-zoom">
              Messages from <span className="text-zinc-800 tabular-nums">{label(bucket, new Date(zoom.from).getTime(), time.zone)}</span> to{' '}
              <span className="text-zinc-800 tabular-nums">{label(bucket, new Date(zoom.to).getTime(), time.zone)}</span>
            </span>
            <button type="button" className="text-brand hover:underline" onClick={() => onZoom(null)}>
              Reset zoom
            </button>
          </>
        ) : (
          <span>Drag across the chart to zoom in and show those messages below.</span>
        )}
      </p>
    </div>
  )
}
