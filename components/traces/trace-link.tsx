import Link from 'next/link'
import type { TraceDto } from '@/lib/shared/schemas/trace-settings'

/** Only links the server built from an http(s) template are followed (docs/ARCHITECTURE.md#traces). */
const isHttpUrl = (url: string | null): url is string => url !== null && /^https?:\/\//i.test(url)

/** "Open trace ↗": the trace in the tracing tool an admin linked, in a new tab that gets no reference back. */
export function OpenTraceLink({ url, className }: { url: string | null; className?: string }) {
  if (!isHttpUrl(url)) return null
  return (
    <a href={url} target="_blank" rel="noopener noreferrer" className={className ?? 'font-sans whitespace-nowrap text-brand hover:underline'} data-testid="open-trace">
      Open trace ↗
    </a>
  )
}

/** A message's trace id (a link to its other failures) and, when a template is set, the link to the trace. */
export function TraceField({ trace }: { trace: TraceDto }) {
  return (
    <span className="inline-flex flex-wrap items-baseline gap-x-3" data-testid="trace-field">
      <Link href={`/messages?traceId=${encodeURIComponent(trace.traceId)}`} className="hover:underline" title="Every message of this trace">
        {trace.traceId}
      </Link>
      <OpenTraceLink url={trace.url} />
    </span>
  )
}
