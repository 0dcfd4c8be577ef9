import 'server-only'
import { isUtf8 } from 'node:buffer'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'

/**
 * NATS message headers (docs/jetstream.md#what-is-stored): a block of `NATS/1.0[ status]\r\n`, then `Name: value`
 * lines, then an empty line. A name may repeat. Lazarus stores them in the typed header form every reader already
 * knows: a name seen once is a string (`S`), a repeated one an array of strings (`A`), in the order the names first
 * appear. When that form cannot give the block back byte for byte (a status line, repeated names that are not
 * adjacent, unusual spacing, bytes that are not UTF-8), the block itself is kept as well.
 */
export type NatsHeaderEntries = { name: string; value: string }[]

const PREAMBLE = 'NATS/1.0'

/** The entries of a header block, or null when it is not one (then only the kept block says what it was). */
export function parseNatsHeaderBlock(block: Buffer): NatsHeaderEntries | null {
  if (!isUtf8(block)) return null
  const text = block.toString('utf8')
  const lines = text.split('\r\n')
  if (!lines[0].startsWith(PREAMBLE)) return null
  const entries: NatsHeaderEntries = []
  for (const line of lines.slice(1)) {
    if (line === '') continue
    const colon = line.indexOf(':')
    if (colon <= 0) return null
    entries.push({ name: line.slice(0, colon), value: line.slice(colon + 1).trim() })
  }
  return entries
}

/** The typed table of the entries: one key per name, an array where the name repeats. */
export function natsEntriesToTyped(entries: NatsHeaderEntries): TypedTable {
  const values = new Map<string, string[]>()
  for (const { name, value } of entries) {
    const list = values.get(name)
    if (list) list.push(value)
    else values.set(name, [value])
  }
  const table: TypedTable = {}
  for (const [name, list] of values) {
    const typed: TypedValue = list.length === 1 ? { t: 'S', v: list[0] } : { t: 'A', v: list.map((v) => ({ t: 'S', v })) }
    if (name === '__proto__') Object.defineProperty(table, name, { value: typed, enumerable: true, writable: true, configurable: true })
    else table[name] = typed
  }
  return table
}

/**
 * The header block a typed table stands for, as the NATS clients write one; null when the table holds something a
 * NATS header cannot carry (a value that is not a string, a line break). Replays publish from this.
 */
export function typedToNatsHeaderBlock(table: TypedTable): Buffer | null {
  let text = `${PREAMBLE}\r\n`
  for (const name of Object.keys(table)) {
    const typed = table[name]
    const list = typed.t === 'S' && 'v' in typed ? [typed.v] : typed.t === 'A' && 'v' in typed ? typed.v.map((v) => (v.t === 'S' && 'v' in v ? v.v : null)) : [null]
    for (const value of list) {
      if (value === null || /[\r\n]/.test(value) || /[\r\n:]/.test(name) || name.trim() !== name || name === '') return null
      text += `${name}: ${value}\r\n`
    }
  }
  return Buffer.from(`${text}\r\n`, 'utf8')
}

/** The typed form of a block, and whether the block must be kept beside it to be given back exactly. */
export function readNatsHeaderBlock(block: Buffer | null): { table: TypedTable; keepBlock: boolean } {
  if (!block || block.length === 0) return { table: {}, keepBlock: false }
  const entries = parseNatsHeaderBlock(block)
  if (!entries) return { table: {}, keepBlock: true }
  const table = natsEntriesToTyped(entries)
  const rebuilt = typedToNatsHeaderBlock(table)
  return { table, keepBlock: !rebuilt || !rebuilt.equals(block) }
}
