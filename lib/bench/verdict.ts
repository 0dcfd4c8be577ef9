/**
 * The last lines of a bench: one per target of docs/performance.md, `PASS` or `MISS`, with the measured value and the
 * target, so a run says at a glance what holds and what does not. A bench is not a test: nothing fails on a MISS.
 */
export type BenchTarget = {
  /** What is measured, as a reader says it: "drainer CPU per message vs the bare pipeline (whole machine)". */
  name: string
  measured: number
  /** The bound the measured value must stay at or above ('min'), or at or below ('max'). */
  bound: 'min' | 'max'
  target: number
  /** How a value reads: a ratio as `×`, a share as `%` (0.9 → 90 %), or a unit after the number. */
  unit: '×' | '%' | 'MiB' | 'MB' | 'B' | 'rows/s' | 'msg/s' | 'µs'
}

const shown = (value: number, unit: BenchTarget['unit']): string => {
  if (!Number.isFinite(value)) return String(value)
  if (unit === '%') return `${(value * 100).toFixed(1)} %`
  if (unit === '×') return `${value.toFixed(2)}×`
  return `${Math.round(value).toLocaleString('en-US')} ${unit}`
}

export const meets = (t: BenchTarget): boolean => (t.bound === 'min' ? t.measured >= t.target : t.measured <= t.target)

/** `PASS name: measured (target ≥ x)` for each target; a value that is not a number is a MISS. */
export function verdictLines(targets: readonly BenchTarget[]): string[] {
  return targets.map((t) => `${meets(t) ? 'PASS' : 'MISS'} ${t.name}: ${shown(t.measured, t.unit)} (target ${t.bound === 'min' ? '≥' : '≤'} ${shown(t.target, t.unit)})`)
}

export function printVerdicts(targets: readonly BenchTarget[]): void {
  console.log(`\n${verdictLines(targets).join('\n')}`)
}
