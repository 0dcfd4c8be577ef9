'use client'

import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { visibleText } from '@/lib/client/format'
import { base64ToBytes } from './hex-dump'

/**
 * Header values in the tagged form the server stores (`{t, v}` or `{t, b64}`, lib/server/platform/broker/typed-fields.ts):
 * shown with their AMQP type, since the type matters to consumers and to an exact replay.
 */
type Typed = { t: string; v?: unknown; b64?: string }

export const AMQP_TYPE_NAMES: Record<string, string> = {
  t: 'boolean',
  b: 'int8',
  B: 'uint8',
  s: 'int16',
  u: 'uint16',
  I: 'int32',
  i: 'uint32',
  l: 'int64',
  T: 'timestamp',
  f: 'float',
  d: 'double',
  D: 'decimal',
  S: 'longstr',
  x: 'bytes',
  F: 'table',
  A: 'array',
  V: 'void',
}

const isTyped = (value: unknown): value is Typed => typeof value === 'object' && value !== null && typeof (value as Typed).t === 'string'

export function typeName(value: unknown): string {
  return isTyped(value) ? (AMQP_TYPE_NAMES[value.t] ?? `type ${value.t}`) : typeof value
}

function bytesPreview(b64: string, max = 48): string {
  let bytes: Uint8Array
  try {
    bytes = base64ToBytes(b64)
  } catch {
    return `base64 ${b64}`
  }
  const hex = Array.from(bytes.subarray(0, max), (b) => b.toString(16).padStart(2, '0')).join(' ')
  return `${bytes.length} bytes: ${hex}${bytes.length > max ? ' …' : ''}`
}

function decimalText(v: { places?: number; digits?: number }): string {
  const places = Number(v.places ?? 0)
  const digits = String(v.digits ?? 0)
  if (places <= 0) return digits
  const negative = digits.startsWith('-')
  const abs = (negative ? digits.slice(1) : digits).padStart(places + 1, '0')
  return `${negative ? '-' : ''}${abs.slice(0, -places)}.${abs.slice(-places)}`
}

function timestampText(seconds: string): string {
  const ms = Number(seconds) * 1000
  const date = new Date(ms)
  return Number.isFinite(ms) && !Number.isNaN(date.getTime()) ? `${date.toISOString()} (${seconds})` : seconds
}

function NestedEntries({ entries, kind }: { entries: [string, unknown][]; kind: 'table' | 'array' }) {
  if (entries.length === 0) return <span className="text-zinc-500">{kind === 'table' ? '{}' : '[]'}</span>
  return (
    <details open={entries.length <= 6} className="group">
      <summary className="cursor-pointer text-xs text-zinc-500 select-none hover:text-zinc-900">
        {entries.length} {kind === 'table' ? 'fields' : 'items'}
      </summary>
      {/* Key and type on one line and the value beside them while it keeps 12rem, else on its own line below: nested
          tables (x-death's entries, their routing keys) would otherwise narrow the value a column per level, down to
          one character a line. */}
      <dl className="mt-0.5 space-y-0.5 border-l border-zinc-200 pl-2" data-testid="nested-entries">
        {entries.map(([key, value]) => (
          <div key={key} className="flex min-w-0 flex-wrap items-baseline gap-x-2">
            <dt className="max-h-24 max-w-full overflow-auto font-mono break-all text-zinc-700">{visibleText(key)}</dt>
            <dd className="text-[11px] text-zinc-500">{typeName(value)}</dd>
            <dd className="max-w-full min-w-[min(12rem,100%)] flex-1 basis-0">
              <TypedValueView value={value} />
            </dd>
          </div>
        ))}
      </dl>
    </details>
  )
}

/** Long texts (stack traces in headers) scroll inside their cell instead of stretching the table. */
function LongText({ text, className }: { text: string; className: string }) {
  if (text.length <= 300) return <span className={className}>{text}</span>
  return <div className={`${className} block max-h-40 overflow-auto rounded bg-zinc-50 px-1`}>{text}</div>
}

export function TypedValueView({ value }: { value: unknown }) {
  if (!isTyped(value)) return <LongText className="font-mono break-all whitespace-pre-wrap" text={visibleText(JSON.stringify(value) ?? 'undefined')} />
  const { t, v, b64 } = value
  const mono = 'font-mono break-all whitespace-pre-wrap'
  // A header nested too deep to store decoded (`tooDeep`): kept as its raw bytes, which are all there is to show.
  if ((t === 'F' || t === 'A') && b64 !== undefined)
    return (
      <span className={mono}>
        <span className="mr-1 text-amber-700">nested too deep, raw:</span>
        {bytesPreview(b64)}
      </span>
    )
  switch (t) {
    case 'F':
      return <NestedEntries kind="table" entries={Object.entries((v as Record<string, unknown>) ?? {})} />
    case 'A':
      return <NestedEntries kind="array" entries={((v as unknown[]) ?? []).map((item, i) => [String(i), item])} />
    case 'V':
      return <span className="text-zinc-500">void</span>
    case 'x':
      return <span className={mono}>{bytesPreview(b64 ?? '')}</span>
    case 'T':
      return <span className={mono}>{timestampText(String(v))}</span>
    case 'D':
      return <span className={mono}>{decimalText((v as { places?: number; digits?: number }) ?? {})}</span>
    case 'S':
      if (b64 !== undefined)
        return (
          <span className={mono}>
            <span className="mr-1 text-amber-700">not UTF-8:</span>
            {bytesPreview(b64)}
          </span>
        )
      return <LongText className={mono} text={visibleText(String(v))} />
    default:
      if (b64 !== undefined) return <span className={mono}>{bytesPreview(b64)}</span>
      return <LongText className={mono} text={visibleText(String(v))} />
  }
}

const HEADER_COLUMNS: DataColumn[] = [
  { header: 'Name', width: 'w-[30%]' },
  { header: 'Type', width: 'w-24' },
  { header: 'Value' },
]

/** Every header with its AMQP type; `x-death` is folded since it has its own timeline. */
export function HeadersTable({ headers }: { headers: Record<string, unknown> }) {
  const entries = Object.entries(headers)
  if (entries.length === 0) return <p className="text-zinc-500">No headers.</p>
  return (
    <DataTable label="Headers" columns={HEADER_COLUMNS} variant="fields">
      {entries.map(([name, value]) => (
        <tr key={name} className="align-top">
          <td className="border-b border-zinc-100 px-2 py-1 font-mono text-xs break-all text-zinc-800">
            <div className="max-h-24 overflow-auto">{visibleText(name)}</div>
          </td>
          <td className="border-b border-zinc-100 px-2 py-1 text-xs text-zinc-500">{typeName(value)}</td>
          <td className="min-w-0 border-b border-zinc-100 px-2 py-1 text-xs">
            {name === 'x-death' && isTyped(value) && value.t === 'A' ? (
              <details>
                <summary className="cursor-pointer text-zinc-500 select-none hover:text-zinc-900">see the x-death timeline (raw entries)</summary>
                <TypedValueView value={value} />
              </details>
            ) : (
              <TypedValueView value={value} />
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  )
}
