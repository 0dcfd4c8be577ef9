/** Counts the work a match does, so tests can bound it without a clock. */
export type MatchMeter = { steps: number }

/**
 * AMQP topic matching: words split on '.', '*' matches exactly one word, '#' zero or more. Patterns come from the
 * broker's bindings, which anyone with configure permission writes, so the work is bounded: at most one step per
 * (pattern word, key word) pair, whatever the pattern.
 */
export function topicMatches(pattern: string, key: string, meter?: MatchMeter): boolean {
  const p = pattern.split('.')
  const k = key.split('.')
  // Memoised on (pattern word, key word): '#' backtracking is otherwise exponential on hostile patterns.
  const memo = new Map<number, boolean>()
  const match = (i: number, j: number): boolean => {
    const id = i * (k.length + 1) + j
    const known = memo.get(id)
    if (known !== undefined) return known
    if (meter) meter.steps++
    let result: boolean
    if (i === p.length) result = j === k.length
    else if (p[i] === '#') result = match(i + 1, j) || (j < k.length && match(i, j + 1))
    else result = j < k.length && (p[i] === '*' || p[i] === k[j]) && match(i + 1, j + 1)
    memo.set(id, result)
    return result
  }
  return match(0, 0)
}
