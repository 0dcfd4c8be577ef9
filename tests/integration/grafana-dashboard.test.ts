import { readFileSync } from 'node:fs'
import path from 'node:path'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as metricsRoute from '@/app/api/metrics/route'
import { ADMIN_AUTH } from '../helpers/auth'
import { createTestDb, type TestDb } from '../helpers/test-db'

type Panel = { type: string; title: string; targets?: { expr: string }[]; panels?: Panel[] }

const dashboard = JSON.parse(readFileSync(path.join(process.cwd(), 'deploy/grafana/lazarus.json'), 'utf8')) as { uid: string; title: string; panels: Panel[] }
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row')

// PromQL words that are neither metrics nor labels: aggregation modifiers and set operators.
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset'])

/**
 * The metric names a PromQL expression reads: every identifier once label matchers, strings, ranges, grouping
 * clauses and function calls are taken out. A histogram's or summary's series (`_bucket`, `_sum`, `_count`) name
 * their family.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
  // Whole identifiers (not parts of numbers such as `1e3`), less those a `(` follows: functions and aggregations.
  const names = [...bare.matchAll(/(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .filter((m) => !/^\s*\(/.test(bare.slice(m.index + m[0].length)))
    .map((m) => m[0])
    .filter((w) => !KEYWORDS.has(w))
  return [...new Set(names)]
}

/** The shipped Grafana dashboard (deploy/grafana/lazarus.json) names only metrics Lazarus exports. */
describe('the Grafana dashboard', () => {
  let db: TestDb
  let exported: Set<string>

  beforeAll(async () => {
    db = await createTestDb()
    const response = await metricsRoute.GET(new Request('http://lazarus.test/api/metrics', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
    expect(response.status).toBe(200)
    exported = new Set((parsePrometheusTextFormat(await response.text()) as { name: string }[]).map((f) => f.name))
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('reads metric names from PromQL', () => {
    expect(metricNames('sum(max by (source, vhost) (rate(lazarus_ingested_messages_total{source=~"a|b"}[5m]))) * 60')).toEqual(['lazarus_ingested_messages_total'])
    expect(metricNames('topk(10, max by (group_id) (lazarus_group_dead_messages)) / ignoring(x) lazarus_error_groups')).toEqual(['lazarus_group_dead_messages', 'lazarus_error_groups'])
  })

  it('is a dashboard whose every panel queries metrics /api/metrics exports', () => {
    expect(dashboard.uid).toBe('lazarus')
    expect(panels.length).toBeGreaterThanOrEqual(10)
    const unknown: string[] = []
    for (const panel of panels) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0)
      for (const { expr } of panel.targets ?? []) {
        const names = metricNames(expr)
        expect(names.length, `${panel.title}: ${expr}`).toBeGreaterThan(0)
        for (const name of names) if (!exported.has(name.replace(/_(bucket|sum|count)$/, '')) && !exported.has(name)) unknown.push(`${panel.title}: ${name}`)
      }
    }
    expect(unknown).toEqual([])
  })

  it('shows every business metric Lazarus exports somewhere', () => {
    const used = new Set(panels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNames(t.expr))))
    const business = [...exported].filter((name) => name.startsWith('lazarus_') && !/^lazarus_(process|nodejs)_/.test(name))
    expect(business.filter((name) => !used.has(name))).toEqual([])
  })
})
