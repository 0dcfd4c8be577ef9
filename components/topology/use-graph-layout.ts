'use client'

import { useEffect, useRef, useState } from 'react'
import type { LayoutRequest, LayoutResponse, Point } from './layout.worker'

export type Layout = { positions: Record<string, Point>; routes: Record<string, Point[]>; labels: Record<string, Point> }

type LayoutState = { key: string; layout: Layout | null; error: string | null }

/**
 * Positions for a graph from the layout worker. One worker per page, kept while the page is open; a newer graph
 * overtakes an older one still being laid out (the answer carries the request's id).
 */
export function useGraphLayout(key: string, request: Omit<LayoutRequest, 'id'>): { layout: Layout | null; error: string | null; pending: boolean } {
  const worker = useRef<Worker | null>(null)
  const latest = useRef(0)
  const [state, setState] = useState<LayoutState>({ key: '', layout: null, error: null })
  const requestRef = useRef(request)
  useEffect(() => {
    requestRef.current = request
  })

  useEffect(() => {
    const w = new Worker(new URL('./layout.worker.ts', import.meta.url), { type: 'module' })
    worker.current = w
    return () => {
      w.terminate()
      worker.current = null
    }
  }, [])

  useEffect(() => {
    const w = worker.current
    if (!w) return
    const id = ++latest.current
    const onMessage = (event: MessageEvent<LayoutResponse>) => {
      if (event.data.id !== id) return
      const data = event.data
      setState('error' in data ? { key, layout: null, error: data.error } : { key, layout: { positions: data.positions, routes: data.routes, labels: data.labels }, error: null })
    }
    w.addEventListener('message', onMessage)
    w.postMessage({ id, ...requestRef.current } satisfies LayoutRequest)
    return () => w.removeEventListener('message', onMessage)
  }, [key])

  const current = state.key === key
  return { layout: current ? state.layout : null, error: current ? state.error : null, pending: !current }
}
