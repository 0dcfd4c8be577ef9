import type { ButtonHTMLAttributes } from 'react'
import { cn } from '@/lib/client/cn'

type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'default' | 'primary' | 'ghost' | 'danger'; size?: 'sm' | 'md' }

const VARIANTS = {
  default: 'border border-zinc-300 bg-white text-zinc-800 hover:bg-zinc-50 active:bg-zinc-100',
  primary: 'border border-brand bg-brand text-white hover:brightness-110',
  ghost: 'border border-transparent text-zinc-600 hover:bg-zinc-100 hover:text-zinc-900',
  danger: 'border border-red-300 bg-white text-red-700 hover:bg-red-50',
} as const

export function Button({ variant = 'default', size = 'sm', className, type = 'button', ...props }: ButtonProps) {
  return (
    <button
      type={type}
      className={cn(
        'inline-flex shrink-0 items-center justify-center gap-1 rounded-md font-medium whitespace-nowrap transition-colors focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-brand disabled:pointer-events-none disabled:opacity-50',
        size === 'sm' ? 'h-7 px-2.5' : 'h-8 px-3',
        VARIANTS[variant],
        className,
      )}
      {...props}
    />
  )
}
