'use client'

import { useRouter } from 'next/navigation'
import { useState, type FormEvent } from 'react'
import { Button } from '@/components/ui/button'
import { Input, Select } from '@/components/ui/fields'
import { ApiError } from '@/lib/client/api'
import { useDeleteView, useSavedViews, useSaveView } from '@/lib/client/use-saved-views'

/** A query string with its parameters in one order, so a view is recognised however its link was written. */
const canonical = (query: string) => {
  const params = [...new URLSearchParams(query)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return new URLSearchParams(params).toString()
}

/**
 * The user's saved views of the message list (README, "Saved views"): pick one to open it, save the current filters
 * under a name (an existing name gets the new filters), delete the one shown.
 */
export function SavedViews({ filters }: { filters: Record<string, string> }) {
  const router = useRouter()
  const views = useSavedViews()
  const save = useSaveView()
  const remove = useDeleteView()
  const [naming, setNaming] = useState(false)
  const [name, setName] = useState('')
  const query = canonical(new URLSearchParams(filters).toString())
  const list = views.data?.views ?? []
  const active = list.find((v) => canonical(v.query) === query)

  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!name.trim()) return
    save.mutate({ name: name.trim(), query }, { onSuccess: () => (setNaming(false), setName('')) })
  }

  return (
    <div className="flex items-center gap-1.5">
      <Select
        aria-label="Saved views"
        className="w-44"
        value={active?.id ?? ''}
        placeholder={views.isPending ? 'Loading views…' : views.isError ? 'Views unavailable' : list.length ? 'Saved views' : 'No saved views'}
        disabled={list.length === 0}
        options={list.map((v) => ({ value: v.id, label: v.name }))}
        onChange={(e) => {
          const view = list.find((v) => v.id === e.target.value)
          router.push(view ? `/messages${view.query ? `?${view.query}` : ''}` : '/messages', { scroll: false })
        }}
      />
      {active && (
        <Button variant="ghost" aria-label={`Delete view ${active.name}`} title={`Delete view “${active.name}”`} disabled={remove.isPending} onClick={() => remove.mutate(active.id)}>
          Delete view
        </Button>
      )}
      {naming ? (
        <form onSubmit={submit} onKeyDown={(e) => e.key === 'Escape' && setNaming(false)} className="flex items-center gap-1.5" aria-label="Save view">
          <Input aria-label="View name" placeholder="View name" className="w-40" value={name} maxLength={80} autoFocus onChange={(e) => setName(e.target.value)} invalid={save.isError} />
          <Button type="submit" variant="primary" disabled={save.isPending || !name.trim()}>
            Save
          </Button>
          <Button variant="ghost" onClick={() => setNaming(false)}>
            Cancel
          </Button>
          {save.isError && (
            <span role="alert" className="text-xs text-red-700">
              {save.error instanceof ApiError ? save.error.message : 'Could not save the view'}
            </span>
          )}
        </form>
      ) : (
        !active &&
        query && (
          <Button variant="ghost" onClick={() => (setName(''), save.reset(), setNaming(true))}>
            Save view
          </Button>
        )
      )}
    </div>
  )
}
