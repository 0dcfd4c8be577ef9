import { describe, expect, it } from 'vitest'
import { verdictLines } from '@/lib/bench/verdict'

describe('bench verdict lines', () => {
  it('says PASS or MISS for each target, with the value and the bound as a reader reads them', () => {
    expect(
      verdictLines([
        { name: 'drainer CPU per message vs bare (whole machine)', measured: 2.4512, bound: 'max', target: 1.5, unit: '×' },
        { name: 'executor vs raw confirmed publish', measured: 0.912, bound: 'min', target: 0.9, unit: '%' },
        { name: 'drainer peak RSS', measured: 199.6, bound: 'max', target: 200, unit: 'MiB' },
        { name: 'export rate', measured: 19_999, bound: 'min', target: 20_000, unit: 'rows/s' },
      ]),
    ).toEqual([
      'MISS drainer CPU per message vs bare (whole machine): 2.45× (target ≤ 1.50×)',
      'PASS executor vs raw confirmed publish: 91.2 % (target ≥ 90.0 %)',
      'PASS drainer peak RSS: 200 MiB (target ≤ 200 MiB)',
      'MISS export rate: 19,999 rows/s (target ≥ 20,000 rows/s)',
    ])
  })

  it('counts a value on the bound as met, and a value that is not a number as missed', () => {
    expect(verdictLines([{ name: 'ratio', measured: 1.5, bound: 'max', target: 1.5, unit: '×' }])[0]).toMatch(/^PASS/)
    expect(verdictLines([{ name: 'ratio', measured: Number.NaN, bound: 'max', target: 1.5, unit: '×' }])).toEqual(['MISS ratio: NaN (target ≤ 1.50×)'])
    expect(verdictLines([{ name: 'share', measured: Number.NaN, bound: 'min', target: 0.5, unit: '%' }])[0]).toMatch(/^MISS/)
  })
})
