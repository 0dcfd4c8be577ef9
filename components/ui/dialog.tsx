'use client'

import { useEffect, useId, useRef, type FormEvent, type KeyboardEvent, type ReactNode } from 'react'
import { cn } from '@/lib/client/cn'
import { Button } from './button'
import { InlineError } from './states'

type DialogProps = {
  title: ReactNode
  /** A line under the title: what the dialog acts on. */
  description?: ReactNode
  onClose: () => void
  /** Called on Enter (outside a button or link) and on the submit button, only when `canSubmit`. */
  onSubmit?: () => void
  canSubmit?: boolean
  children: ReactNode
  /** The button row; the submit button is `type="submit"`. */
  footer?: ReactNode
  /** 'lg' for the replay plan; 'md' for confirmations and short forms. */
  size?: 'md' | 'lg'
}

/**
 * A modal on the native <dialog> (top layer, focus kept inside, inert page behind). Mount it to open it.
 * Esc closes; Enter confirms when the form is valid (Shift+Enter still makes a new line in a text area).
 * Keys typed inside never reach the page's own shortcuts (j/k/x on a list behind it).
 *
 * Initial focus: the element marked `data-autofocus`, else the dialog itself (so Enter confirms rather than
 * pressing the close button). React's `autoFocus` would be undone by showModal(), which focuses on its own.
 */
export function Dialog({ title, description, onClose, onSubmit, canSubmit = true, children, footer, size = 'md' }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null)
  const titleId = useId()
  const descriptionId = useId()
  const latest = useRef({ onSubmit, canSubmit })
  useEffect(() => {
    latest.current = { onSubmit, canSubmit }
  })

  useEffect(() => {
    const dialog = ref.current
    if (dialog && !dialog.open) {
      dialog.showModal()
      const first = dialog.querySelector<HTMLElement>('[data-autofocus]')
      if (first) first.focus()
      else dialog.focus()
    }
    return () => dialog?.close()
  }, [])

  const submit = (event?: FormEvent) => {
    event?.preventDefault()
    if (latest.current.canSubmit) latest.current.onSubmit?.()
  }

  const onKeyDown = (event: KeyboardEvent<HTMLDialogElement>) => {
    event.stopPropagation()
    if (event.key !== 'Enter' || event.nativeEvent.isComposing || event.altKey || event.ctrlKey || event.metaKey) return
    const target = event.target
    if (target instanceof HTMLButtonElement || target instanceof HTMLAnchorElement) return
    if (target instanceof HTMLTextAreaElement && event.shiftKey) return
    event.preventDefault()
    submit()
  }

  return (
    <dialog
      ref={ref}
      tabIndex={-1}
      aria-labelledby={titleId}
      aria-describedby={description ? descriptionId : undefined}
      onCancel={(e) => {
        e.preventDefault()
        onClose()
      }}
      onKeyDown={onKeyDown}
      // A click on the backdrop (the dialog element itself, outside its panel) closes.
      onMouseDown={(e) => e.target === e.currentTarget && onClose()}
      className={cn(
        // Anchored near the top, not centred: a re-plan that changes the content's height must not move the buttons' row up and down.
        // It may be rendered inside a toolbar: nothing of the opener's text style (nowrap, colour) leaks in.
        'mx-auto mt-[8vh] max-h-[min(84vh,900px)] overflow-hidden rounded-lg border border-zinc-200 bg-white p-0 text-left font-normal whitespace-normal text-zinc-900 shadow-xl outline-none backdrop:bg-zinc-900/30',
        size === 'lg' ? 'w-[min(760px,calc(100vw-2rem))]' : 'w-[min(540px,calc(100vw-2rem))]',
      )}
    >
      <form onSubmit={submit} className="flex max-h-[inherit] flex-col" noValidate>
        <header className="flex shrink-0 items-start gap-3 border-b border-zinc-100 px-4 py-3">
          <div className="min-w-0 flex-1">
            <h2 id={titleId} className="text-[14px] font-semibold">
              {title}
            </h2>
            {description && (
              <p id={descriptionId} className="mt-0.5 truncate text-xs text-zinc-500">
                {description}
              </p>
            )}
          </div>
          <button type="button" onClick={onClose} aria-label="Close" className="-mr-1 flex size-6 items-center justify-center rounded text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900">
            <svg aria-hidden viewBox="0 0 16 16" className="size-3.5 stroke-current" strokeWidth={1.8}>
              <path d="m4 4 8 8M12 4l-8 8" strokeLinecap="round" />
            </svg>
          </button>
        </header>
        <div className="min-h-0 flex-1 overflow-y-auto px-4 py-3">{children}</div>
        {footer && <footer className="flex shrink-0 items-center justify-end gap-2 border-t border-zinc-100 bg-zinc-50/60 px-4 py-2.5">{footer}</footer>}
      </form>
    </dialog>
  )
}

/**
 * The one dialog that asks before an action: a "keep" button, a confirm button that submits (with Enter too), the
 * action's error beside them, and the confirm button disabled while it runs. `tone` is 'danger' for what destroys or
 * stops something (delete, cancel), 'primary' for what only carries on (resume a pause).
 */
export function ConfirmDialog({
  title,
  description,
  onClose,
  onConfirm,
  pending,
  error,
  keepLabel,
  confirmLabel,
  pendingLabel,
  tone = 'danger',
  children,
}: {
  title: string
  description?: string
  onClose: () => void
  onConfirm: () => void
  pending: boolean
  error: unknown
  keepLabel: string
  confirmLabel: string
  pendingLabel: string
  tone?: 'danger' | 'primary'
  children: ReactNode
}) {
  return (
    <Dialog
      title={title}
      description={description}
      onClose={onClose}
      onSubmit={onConfirm}
      canSubmit={!pending}
      footer={
        <>
          {error ? (
            <span className="mr-auto min-w-0 truncate text-xs">
              <InlineError error={error} />
            </span>
          ) : null}
          <Button onClick={onClose}>{keepLabel}</Button>
          <Button type="submit" variant={tone} disabled={pending} data-autofocus>
            {pending ? pendingLabel : confirmLabel}
          </Button>
        </>
      }
    >
      {children}
    </Dialog>
  )
}
