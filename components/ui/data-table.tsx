import type { ReactNode, Ref } from 'react'
import { cn } from '@/lib/client/cn'
import { SkeletonRows } from './skeleton'

/**
 * One column of a DataTable: its header and its fixed width (a Tailwind width class; none takes the rest). `sort`
 * marks the column the rows are sorted by (aria-sort); a header that changes the sort brings its own button. `wide`
 * shows the column from the xl breakpoint (1280 px) up only: for facts the row also states elsewhere, which a narrower
 * window leaves out rather than cut the other columns short. The caller gives its cells WIDE_ONLY.
 */
export type DataColumn = { header?: ReactNode; width?: string; align?: 'right'; title?: string; sort?: 'ascending' | 'descending' | 'none'; wide?: boolean }

/** The cells of a `wide` column (DataColumn): hidden below xl, like the column itself. */
export const WIDE_ONLY = 'hidden xl:table-cell'

const VARIANTS = {
  /** One line per row, 32 px high, a grey header band (app/globals.css `.data-table`). */
  rows: { table: 'data-table', headRow: undefined, th: undefined },
  /** Name and value: rows as tall as their values (a message's headers and properties); the cells bring their padding. */
  fields: { table: 'w-full table-fixed border-collapse text-left', headRow: 'text-[11px] tracking-wide text-zinc-500 uppercase', th: 'border-b border-zinc-200 px-2 py-1 font-medium' },
} as const

/**
 * The fixed-layout table of every list, breakdown and field listing: widths set once in a colgroup (rows never
 * reflow as data arrives), skeleton rows of the real row height while the first page loads (`pending`), aria-busy
 * meanwhile. The rows are the caller's own `<tr>`s, so each keeps its data attributes, cursor and details row.
 * Columns without any header make a table without a header row.
 */
export function DataTable({
  label,
  columns,
  pending = false,
  skeletonRows = 8,
  bodyRef,
  variant = 'rows',
  className,
  children,
}: {
  label: string
  columns: readonly DataColumn[]
  pending?: boolean
  skeletonRows?: number
  bodyRef?: Ref<HTMLTableSectionElement>
  variant?: keyof typeof VARIANTS
  className?: string
  children: ReactNode
}) {
  const style = VARIANTS[variant]
  return (
    <table className={cn(style.table, className)} aria-label={label} aria-busy={pending || undefined}>
      <colgroup>
        {columns.map((column, i) => (
          // A hidden <col> drops out of the table's columns, so the cells that remain keep their own widths.
          <col key={i} className={cn(column.width, column.wide && 'hidden xl:table-column') || undefined} />
        ))}
      </colgroup>
      {columns.some((column) => column.header !== undefined) && (
        <thead>
          <tr className={style.headRow}>
            {columns.map((column, i) => (
              <th key={i} className={cn(style.th, column.align === 'right' && 'text-right', column.wide && WIDE_ONLY) || undefined} title={column.title} aria-sort={column.sort}>
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
      )}
      <tbody ref={bodyRef}>{pending ? <SkeletonRows columns={columns.length} rows={skeletonRows} cellClassNames={columns.map((c) => (c.wide ? WIDE_ONLY : undefined))} /> : children}</tbody>
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
