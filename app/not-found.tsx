import Link from 'next/link'
import { EmptyState } from '@/components/ui/states'

export default function NotFound() {
  return (
    <EmptyState title="Not found">
      Nothing lives at this address. Back to the{' '}
      <Link href="/" className="text-brand underline underline-offset-2">
        error groups
      </Link>
      .
    </EmptyState>
  )
}
