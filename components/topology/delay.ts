const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const

/** A retry delay as the builder's form takes it: `30s`, `5m`, `1h`, `250ms`; a bare number is seconds. */
export function parseDelay(text: string): number | null {
  const match = /^\s*(\d+)\s*(ms|s|m|h)?\s*$/.exec(text)
  if (!match) return null
  return Number(match[1]) * UNIT_MS[(match[2] ?? 's') as keyof typeof UNIT_MS]
}
