'use client'

import { Button } from '@/components/ui/button'
import { InlineError } from '@/components/ui/states'

type SaveDiscardProps = {
  /** Whether there is an edit to save or discard (the draft differs from what is stored). */
  dirty: boolean
  saving: boolean
  error: unknown
  onDiscard: () => void
  /** Without it, Save submits the surrounding form. */
  onSave?: () => void
  /** Further reasons Save is off (an invalid value). */
  disabled?: boolean
}

/** The end of a settings editor: Save (off until something changed), Discard while there is a draft, the API's error. */
export function SaveDiscard({ dirty, saving, error, onDiscard, onSave, disabled = false }: SaveDiscardProps) {
  return (
    <>
      <Button type={onSave ? 'button' : 'submit'} variant="primary" disabled={!dirty || disabled || saving} onClick={onSave}>
        {saving ? 'Saving…' : 'Save'}
      </Button>
      {dirty && (
        <Button variant="ghost" onClick={onDiscard}>
          Discard
        </Button>
      )}
      {Boolean(error) && <InlineError error={error} />}
    </>
  )
}
