import { notFound } from 'next/navigation'
import { getMessage } from '@/lib/server/messages/get-message'
import { AppError } from '@/lib/server/errors/app-error'

export const dynamic = 'force-dynamic'

export default async function MessagePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params
  let message
  try {
    message = await getMessage({ id })
  } catch (error) {
    if (error instanceof AppError && error.code === 'not_found') notFound()
    throw error
  }
  return (
    <section className="space-y-4">
      <h1 className="font-mono text-base font-semibold break-all">{message.groupTitle}</h1>
      <dl className="grid grid-cols-[12rem_1fr] gap-x-4 gap-y-1 bg-white p-3">
        {[
          ['Source', message.source.queue], ['Status', message.status], ['Failure kind', message.failureKind],
          ['Framework', message.framework], ['Service', [message.service, message.serviceVersion].filter(Boolean).join(' ')],
          ['Entity', message.entityKey], ['Attempts', message.attempts], ['Death reason', message.deathReason],
          ['Origin', `${message.origin.exchange ?? '?'} → ${message.origin.routingKeys.join(', ')} (${message.origin.queue ?? '?'})`],
          ['Failed at', message.failedAt],
        ].map(([label, value]) => (
          <div key={String(label)} className="contents">
            <dt className="text-zinc-500">{label}</dt>
            <dd className="font-mono break-all">{value === null || value === '' ? '—' : String(value)}</dd>
          </div>
        ))}
      </dl>
      <h2 className="font-semibold">Error</h2>
      <pre className="max-h-96 overflow-auto bg-white p-3 font-mono text-xs whitespace-pre-wrap break-all">{[message.error.type, message.error.message].filter(Boolean).join(': ')}{'\n'}{message.error.stack}</pre>
      <h2 className="font-semibold">Body ({message.body.size} bytes, {message.body.encoding})</h2>
      <pre className="max-h-96 overflow-auto bg-white p-3 font-mono text-xs whitespace-pre-wrap break-all">{message.body.text ?? `[binary: download the raw body]`}</pre>
      <a className="text-brand underline" href={`/api/messages/${message.id}/body`}>Download raw body</a>
      <h2 className="font-semibold">Headers</h2>
      <pre className="max-h-96 overflow-auto bg-white p-3 font-mono text-xs whitespace-pre-wrap break-all">{JSON.stringify(message.headers, null, 2)}</pre>
    </section>
  )
}
