'use client'

import { useEffect, useState } from 'react'
import { cn } from '@/lib/client/cn'
import { cleanOperatorName, OPERATOR_MAX_LENGTH, setOperator, useOperator } from '@/lib/client/use-operator'

/**
 * The operator's name, kept in this browser and sent with every change (replay, resolve, pause) for the audit
 * log. Saved on Enter or when the field loses focus.
 */
export function OperatorField() {
  const operator = useOperator()
  const [text, setText] = useState(operator)
  useEffect(() => setText(operator), [operator])
  const save = () => {
    const clean = cleanOperatorName(text)
    setText(clean)
    if (clean !== operator) setOperator(clean)
  }
  return (
    <label className="flex items-center gap-1.5 text-xs text-zinc-500" title="Recorded in the audit log with every replay, resolve, pause and resume">
      <span className={cn('inline-block size-1.5 rounded-full', operator ? 'bg-emerald-500' : 'bg-amber-400')} aria-hidden />
      Operator
      <input
        aria-label="Operator name"
        value={text}
        maxLength={OPERATOR_MAX_LENGTH}
        placeholder="your name"
        autoComplete="nickname"
        spellCheck={false}
        onChange={(e) => setText(e.target.value)}
        onBlur={save}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            save()
            e.currentTarget.blur()
          }
          if (e.key === 'Escape') {
            setText(operator)
            e.currentTarget.blur()
          }
        }}
        className="h-6 w-40 rounded border border-zinc-200 bg-white px-1.5 text-xs text-zinc-900 placeholder:text-amber-700/70 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none"
      />
    </label>
  )
}
