'use client'

import { ErrorState } from '@/components/ui/states'

export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return <ErrorState title="This page failed to render" error={error} onRetry={reset} />
}
