/**
 * The editor's view of a typed header value (docs/rabbitmq.md#typed-headers): a type tag and the text in its input.
 * The server checks every value again by encoding the table; this only turns text into the tagged form and says
 * early what cannot be one.
 */

export type TypedJson = { t: string; v?: unknown; b64?: string; tooDeep?: true }

export const EDITABLE_TYPES: { value: string; label: string }[] = [
  { value: 'S', label: 'string' },
  { value: 'I', label: 'int32' },
  { value: 'l', label: 'int64 (long)' },
  { value: 's', label: 'int16 (short)' },
  { value: 'b', label: 'int8 (byte)' },
  { value: 'B', label: 'uint8' },
  { value: 'u', label: 'uint16' },
  { value: 'i', label: 'uint32' },
  { value: 'f', label: 'float' },
  { value: 'd', label: 'double' },
  { value: 'D', label: 'decimal' },
  { value: 'T', label: 'timestamp' },
  { value: 't', label: 'boolean' },
  { value: 'x', label: 'bytes (base64)' },
  { value: 'V', label: 'void' },
  { value: 'F', label: 'table (typed JSON)' },
  { value: 'A', label: 'array (typed JSON)' },
  { value: 'raw', label: 'raw (typed JSON)' },
]

const INT_RANGES: Record<string, [number, number]> = { b: [-128, 127], B: [0, 255], s: [-32768, 32767], u: [0, 65535], I: [-2147483648, 2147483647], i: [0, 4294967295] }

/** The type and the input text a stored value starts with; values the inputs cannot show exactly are edited as typed JSON. */
export function toEditable(value: TypedJson): { type: string; text: string } {
  const raw = { type: 'raw', text: JSON.stringify(value) }
  if ('b64' in value && value.t !== 'x') return raw
  switch (value.t) {
    case 't':
      return { type: 't', text: String(value.v) }
    case 'S':
    case 'l':
      return { type: value.t, text: String(value.v) }
    case 'T': {
      const ms = Number(value.v) * 1000
      return Number.isSafeInteger(ms) && ms < 8.64e15 ? { type: 'T', text: new Date(ms).toISOString().replace('.000Z', 'Z') } : raw
    }
    case 'f':
    case 'd':
    case 'b':
    case 'B':
    case 's':
    case 'u':
    case 'I':
    case 'i':
      return { type: value.t, text: String(value.v) }
    case 'D': {
      const { places, digits } = value.v as { places: number; digits: number }
      const negative = digits < 0
      const abs = String(Math.abs(digits)).padStart(places + 1, '0')
      return { type: 'D', text: `${negative ? '-' : ''}${places ? `${abs.slice(0, -places)}.${abs.slice(-places)}` : abs}` }
    }
    case 'x':
      return { type: 'x', text: value.b64 ?? '' }
    case 'V':
      return { type: 'V', text: '' }
    case 'F':
    case 'A':
      return { type: value.t, text: JSON.stringify(value) }
    default:
      return raw
  }
}

/** The typed value of an input, or why it is not one. */
export function fromEditable(type: string, text: string): { value: TypedJson } | { error: string } {
  const trimmed = text.trim()
  if (type in INT_RANGES) {
    const n = Number(trimmed)
    const [min, max] = INT_RANGES[type]
    if (!/^-?\d+$/.test(trimmed) || n < min || n > max) return { error: `a whole number from ${min} to ${max}` }
    return { value: { t: type, v: n } }
  }
  switch (type) {
    case 'S':
      return { value: { t: 'S', v: text } }
    case 'l': {
      if (!/^-?\d+$/.test(trimmed)) return { error: 'a whole number' }
      const n = BigInt(trimmed)
      if (n < -(2n ** 63n) || n > 2n ** 63n - 1n) return { error: 'out of the int64 range' }
      return { value: { t: 'l', v: n.toString() } }
    }
    case 'f':
    case 'd': {
      const n = Number(trimmed)
      if (trimmed === '' || !Number.isFinite(n)) return { error: 'a finite number' }
      return { value: { t: type, v: type === 'f' ? Math.fround(n) : n } }
    }
    case 'D': {
      const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(trimmed)
      if (!match) return { error: 'a decimal such as 19.99' }
      const places = match[3]?.length ?? 0
      const digits = Number(`${match[1]}${match[2]}${match[3] ?? ''}`)
      if (places > 255 || !Number.isSafeInteger(digits) || digits < -2147483648 || digits > 2147483647) return { error: 'too many digits for an AMQP decimal' }
      return { value: { t: 'D', v: { places, digits } } }
    }
    case 'T': {
      const ms = Date.parse(trimmed)
      if (Number.isNaN(ms) || ms < 0) return { error: 'an ISO time such as 2026-01-01T00:00:00Z' }
      return { value: { t: 'T', v: String(Math.floor(ms / 1000)) } }
    }
    case 't':
      if (trimmed !== 'true' && trimmed !== 'false') return { error: 'true or false' }
      return { value: { t: 't', v: trimmed === 'true' } }
    case 'x':
      if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(trimmed)) return { error: 'base64' }
      return { value: { t: 'x', b64: trimmed } }
    case 'V':
      return { value: { t: 'V' } }
    default: {
      let parsed: unknown
      try {
        parsed = JSON.parse(trimmed)
      } catch {
        return { error: 'typed JSON such as {"t":"F","v":{…}}' }
      }
      if (typeof parsed !== 'object' || parsed === null || typeof (parsed as TypedJson).t !== 'string') return { error: 'typed JSON with a "t"' }
      if ((type === 'F' || type === 'A') && (parsed as TypedJson).t !== type) return { error: `typed JSON with "t": "${type}"` }
      return { value: parsed as TypedJson }
    }
  }
}
