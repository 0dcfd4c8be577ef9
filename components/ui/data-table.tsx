import type { ReactNode, Ref } from 'react'
import { cn } from '@/lib/client/cn'
import { SkeletonRows } from './skeleton'

/** One column of a DataTable: its header and its fixed width (a Tailwind width class; none takes the rest). */
export type DataColumn = { header?: ReactNode; width?: string; align?: 'right'; title?: string }

/**
 * The dense, fixed-layout table of the list pages: widths set once in a colgroup (rows never reflow as data
 * arrives), skeleton rows of the real row height while the first page loads, aria-busy meanwhile.
 */
export function DataTable({
  label,
  columns,
  pending,
  skeletonRows = 8,
  bodyRef,
  className,
  children,
}: {
  label: string
  columns: readonly DataColumn[]
  pending: boolean
  skeletonRows?: number
  bodyRef?: Ref<HTMLTableSectionElement>
  className?: string
  children: ReactNode
}) {
  return (
    <table className={cn('data-table', className)} aria-label={label} aria-busy={pending || undefined}>
      <colgroup>
        {columns.map((column, i) => (
          <col key={i} className={column.width} />
        ))}
      </colgroup>
      <thead>
        <tr>
          {columns.map((column, i) => (
            <th key={i} className={column.align === 'right' ? 'text-right' : undefined} title={column.title}>
              {column.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody ref={bodyRef}>{pending ? <SkeletonRows columns={columns.length} rows={skeletonRows} /> : children}</tbody>
    </table>
  )
}

/** The row-end button that opens a row's details (DetailRow) under it. */
export function DetailsToggle({ open, onToggle }: { open: boolean; onToggle: () => void }) {
  return (
    <button
      type="button"
      onClick={onToggle}
      aria-expanded={open}
      aria-label={open ? 'Hide details' : 'Show details'}
      className="rounded px-1.5 text-xs whitespace-nowrap text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900"
    >
      {open ? 'hide' : 'details'}
    </button>
  )
}

/** A full-width row of details under the row it belongs to. */
export function DetailRow({ columns, children }: { columns: readonly DataColumn[]; children: ReactNode }) {
  return (
    <tr>
      <td colSpan={columns.length} className="h-auto! bg-zinc-50 py-2">
        {children}
      </td>
    </tr>
  )
}
