'use client'

import { Button } from '@/components/ui/button'
import { Input, Select } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { visibleText } from '@/lib/client/format'
import { EDITABLE_TYPES } from '@/lib/client/typed-values'
import { emptyHeaderRow, headerRowError, NUMBER_PROPERTIES, PROPERTY_FIELDS, type HeaderRow, type PropertyTexts } from './message-edit'

/** The header table: a row per header (name, AMQP type, value), each value checked as it is typed. */
export function EditHeadersPanel({ rows, onRows }: { rows: HeaderRow[]; onRows: (rows: HeaderRow[]) => void }) {
  return (
    <Panel title="Headers" actions={<Button size="sm" onClick={() => onRows([...rows, emptyHeaderRow()])}>Add header</Button>} bodyClassName="p-0">
      <table className="w-full table-fixed border-collapse text-xs" aria-label="Headers">
        <thead className="text-left text-[11px] text-zinc-500">
          <tr>
            <th className="w-[32%] border-b border-zinc-200 px-2 py-1 font-medium">Name</th>
            <th className="w-40 border-b border-zinc-200 px-2 py-1 font-medium">Type</th>
            <th className="border-b border-zinc-200 px-2 py-1 font-medium">Value</th>
            <th className="w-8 border-b border-zinc-200" />
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) => {
            const update = (patch: Partial<HeaderRow>) => onRows(rows.map((r) => (r.key === row.key ? { ...r, ...patch } : r)))
            const error = headerRowError(row)
            return (
              <tr key={row.key} className="align-top">
                <td className="border-b border-zinc-100 px-1 py-1">
                  <Input className="w-full font-mono text-xs" aria-label={`Header ${i + 1} name`} value={row.name} onChange={(e) => update({ name: e.target.value })} />
                </td>
                <td className="border-b border-zinc-100 px-1 py-1">
                  <Select className="w-full text-xs" aria-label={`Header ${i + 1} type`} options={EDITABLE_TYPES} value={row.type} onChange={(e) => update({ type: e.target.value })} />
                </td>
                <td className="border-b border-zinc-100 px-1 py-1">
                  <Input className="w-full font-mono text-xs" aria-label={`Header ${i + 1} value`} value={row.text} disabled={row.type === 'V'} invalid={Boolean(error)} onChange={(e) => update({ text: e.target.value })} />
                  {error && <span className="text-[11px] text-red-700">{error}</span>}
                </td>
                <td className="border-b border-zinc-100 px-1 py-1 text-center">
                  <button type="button" aria-label={`Remove header ${visibleText(row.name)}`} className="rounded px-1 text-zinc-400 hover:bg-zinc-100 hover:text-red-700" onClick={() => onRows(rows.filter((r) => r.key !== row.key))}>
                    ×
                  </button>
                </td>
              </tr>
            )
          })}
          {rows.length === 0 && (
            <tr>
              <td colSpan={4} className="px-2 py-2 text-zinc-500">
                No headers.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <p className="px-2 py-1.5 text-[11px] text-zinc-500">
        x-death, x-first-death-*, x-last-death-*, CC, BCC and x-lazarus-* are the broker&apos;s and Lazarus&apos; own: a replay never sends them back, and a
        revision may keep or remove them but not set them.
      </p>
    </Panel>
  )
}

/** The AMQP properties a replay sends, one text input each ('' leaves a property out). */
export function EditPropertiesPanel({ texts, onTexts }: { texts: PropertyTexts; onTexts: (texts: PropertyTexts) => void }) {
  return (
    <Panel title="Properties">
      <div className="grid grid-cols-[8rem_minmax(0,1fr)] items-center gap-x-2 gap-y-1 text-xs">
        {PROPERTY_FIELDS.map((key) => (
          <label key={key} className="contents">
            <span className="text-zinc-500">{key}</span>
            <Input className="font-mono text-xs" inputMode={NUMBER_PROPERTIES.has(key) ? 'numeric' : undefined} value={texts[key]} onChange={(e) => onTexts({ ...texts, [key]: e.target.value })} />
          </label>
        ))}
      </div>
    </Panel>
  )
}
