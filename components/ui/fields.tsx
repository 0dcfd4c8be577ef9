import type { ComponentProps, ReactNode } from 'react'
import { cn } from '@/lib/client/cn'

const FIELD =
  'h-7 rounded-md border border-zinc-300 bg-white px-2 text-[13px] text-zinc-900 placeholder:text-zinc-400 focus:border-brand focus:outline-none focus:ring-2 focus:ring-brand/20 disabled:bg-zinc-50 disabled:text-zinc-400'

export function Input({ className, invalid, ...props }: ComponentProps<'input'> & { invalid?: boolean }) {
  return <input className={cn(FIELD, 'min-w-0', invalid && 'border-red-400 focus:border-red-500 focus:ring-red-200', className)} aria-invalid={invalid || undefined} {...props} />
}

export type SelectOption = { value: string; label: string }

type SelectProps = Omit<ComponentProps<'select'>, 'children'> & { options: readonly SelectOption[]; placeholder?: string; invalid?: boolean }

/** A native select: fast, keyboard-friendly and accessible without a library. */
export function Select({ className, options, placeholder, invalid, ...props }: SelectProps) {
  return (
    <select className={cn(FIELD, 'max-w-56 pr-6', !props.value && placeholder && 'text-zinc-500', invalid && 'border-red-400', className)} aria-invalid={invalid || undefined} {...props}>
      {placeholder !== undefined && <option value="">{placeholder}</option>}
      {options.map((o) => (
        <option key={o.value} value={o.value}>
          {o.label}
        </option>
      ))}
    </select>
  )
}

export function Checkbox({ className, ...props }: Omit<ComponentProps<'input'>, 'type'>) {
  return <input type="checkbox" className={cn('size-3.5 cursor-pointer rounded-sm border-zinc-300 accent-brand align-middle', className)} {...props} />
}

/** A labelled form field with its validation message right below it. */
export function Field({ label, error, hint, children, className }: { label: string; error?: string; hint?: string; children: ReactNode; className?: string }) {
  return (
    <label className={cn('flex min-w-0 flex-col gap-1', className)}>
      <span className="text-xs font-medium text-zinc-600">{label}</span>
      {children}
      {error ? (
        <span role="alert" className="text-xs break-words text-red-700">
          {error}
        </span>
      ) : hint ? (
        <span className="text-xs text-zinc-500">{hint}</span>
      ) : null}
    </label>
  )
}
