'use client'

import { isServer, QueryClient, QueryClientProvider } from '@tanstack/react-query'
import type { ReactNode } from 'react'
import { ApiError } from '@/lib/client/api'
import { DisplayPrefsProvider } from '@/lib/client/use-display-prefs'
import type { DisplayPrefs } from '@/lib/shared/display-prefs'

function makeQueryClient() {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        refetchOnWindowFocus: true,
        // A 4xx will not heal by asking again; network blips and 5xx might.
        retry: (failures, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && failures < 2,
      },
    },
  })
}

// One client per browser tab (docs/ARCHITECTURE.md#the-web-side): a useState client would be thrown away by a
// suspending render.
let browserClient: QueryClient | undefined

function getQueryClient() {
  if (isServer) return makeQueryClient()
  browserClient ??= makeQueryClient()
  return browserClient
}

export function Providers({ prefs, children }: { prefs: DisplayPrefs; children: ReactNode }) {
  return (
    <QueryClientProvider client={getQueryClient()}>
      <DisplayPrefsProvider initial={prefs}>{children}</DisplayPrefsProvider>
    </QueryClientProvider>
  )
}
