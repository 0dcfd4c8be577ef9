'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { Panel } from '@/components/ui/panel'
import { ErrorState } from '@/components/ui/states'
import { SaveDiscard } from './save-discard'
import { apiGet, apiSend } from '@/lib/client/api'
import { settingsKeys } from '@/lib/shared/query-keys'

/** The keys of a settings DTO that hold a list of strings. */
type ListField<Dto> = { [K in keyof Dto]: Dto[K] extends string[] ? K : never }[keyof Dto] & string

type AllowListEditorProps<Dto> = {
  title: string
  /** GET and PUT endpoint; both answer `Dto`. */
  path: string
  /** The field holding the stored list, and the one holding the environment's (read-only) entries. */
  field: ListField<Dto>
  environmentField: ListField<Dto>
  help: string
  placeholder: string
}

/** One entry per line; what the environment adds is shown but only changeable there. */
export function AllowListEditor<Dto>({ title, path, field, environmentField, help, placeholder }: AllowListEditorProps<Dto>) {
  const client = useQueryClient()
  const query = useQuery({ queryKey: settingsKeys.allowList(path), queryFn: ({ signal }) => apiGet<Dto>(path, { signal }) })
  const save = useMutation({
    mutationFn: (entries: string[]) => apiSend<Dto>('PUT', path, { [field]: entries }),
    onSuccess: (data) => {
      client.setQueryData(settingsKeys.allowList(path), data)
      setDraft(null)
    },
  })
  const [draft, setDraft] = useState<string | null>(null)
  const stored = (query.data?.[field] as string[] | undefined) ?? []
  const fromEnv = (query.data?.[environmentField] as string[] | undefined) ?? []
  const text = draft ?? stored.join('\n')
  if (query.error) return <ErrorState title={`Could not load ${title.toLowerCase()}`} error={query.error} onRetry={() => void query.refetch()} />
  return (
    <Panel title={title}>
      <p className="mb-2 text-xs text-zinc-500">{help}</p>
      <textarea
        aria-label={title}
        value={text}
        rows={Math.min(8, Math.max(3, text.split('\n').length + 1))}
        placeholder={placeholder}
        spellCheck={false}
        disabled={query.isPending}
        onChange={(e) => setDraft(e.target.value)}
        className="w-full rounded-md border border-zinc-300 bg-white px-2 py-1 font-mono text-xs leading-5 text-zinc-900 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none"
      />
      {fromEnv.length > 0 && <p className="mt-1 text-xs text-zinc-500">From the environment as well: <span className="font-mono">{fromEnv.join(', ')}</span></p>}
      <div className="mt-2 flex items-center gap-2">
        <SaveDiscard
          dirty={draft !== null}
          saving={save.isPending}
          error={save.error}
          onDiscard={() => setDraft(null)}
          onSave={() => save.mutate(text.split('\n').map((l) => l.trim()).filter(Boolean))}
        />
      </div>
    </Panel>
  )
}
