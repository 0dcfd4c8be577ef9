/** Bytes as the classic three-column dump: offset | 16 bytes in hex | printable ASCII (others as "."). */
export function hexDump(bytes: Uint8Array, maxBytes = 64 * 1024): { text: string; shown: number } {
  const shown = Math.min(bytes.length, maxBytes)
  const lines: string[] = []
  for (let offset = 0; offset < shown; offset += 16) {
    const row = bytes.subarray(offset, Math.min(offset + 16, shown))
    let hex = ''
    let ascii = ''
    for (let i = 0; i < 16; i++) {
      if (i === 8) hex += ' '
      if (i < row.length) {
        const b = row[i]!
        hex += b.toString(16).padStart(2, '0') + ' '
        ascii += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.'
      } else hex += '   '
    }
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex} |${ascii}|`)
  }
  return { text: lines.join('\n'), shown }
}

export function base64ToBytes(base64: string): Uint8Array {
  const binary = atob(base64)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}
