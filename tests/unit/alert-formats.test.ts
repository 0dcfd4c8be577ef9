import { describe, expect, it } from 'vitest'
import type { AlertEventRow } from '@/lib/server/alerts/alert-dto'
import { buildAlertNotification, type GroupFacts } from '@/lib/server/engines/alert-evaluator/formats/alert-notification'
import { formatPayload } from '@/lib/server/engines/alert-evaluator/formats/format-payload'
import { DEFAULT_REDACTION_RULES } from '@/lib/server/redaction/default-rules'
import { createRedactor } from '@/lib/server/redaction/redactor'

const redactor = createRedactor(DEFAULT_REDACTION_RULES)
const AT = new Date('2026-12-07T10:00:00Z')

const groupEvent = (id: number, title: string): AlertEventRow => ({
  id: String(id), rule_id: '7', kind: 'group-rate', state: 'firing', subject_type: 'group', subject_id: String(100 + id), subject_label: title,
  rate_per_minute: 12, threshold_per_minute: 5, text: `Dead letters: “${title}” arrives at 12/min over the last 5 min (threshold 5/min). <https://lazarus.example.com/groups/${100 + id}|Open in Lazarus>`,
  notified: true, delivery: [], at: AT,
})

const notify = (rows: AlertEventRow[], groups = new Map<string, GroupFacts>(), ruleGroupId: string | null = null) =>
  buildAlertNotification({ rows, redactor, groups, ruleGroupId, publicUrl: 'https://lazarus.example.com/' })
const payload = (rows: AlertEventRow[], format: 'generic' | 'slack' | 'teams' | 'pagerduty', groups?: Map<string, GroupFacts>) =>
  JSON.parse(formatPayload({ notification: notify(rows, groups), format, routingKey: format === 'pagerduty' ? 'k'.repeat(32) : null }))

describe('webhook formats', () => {
  it('keep Slack within Block Kit limits however long a title or large a storm', () => {
    const rows = Array.from({ length: 500 }, (_, i) => groupEvent(i, `Boom ${'x'.repeat(5_000)} ${i}`))
    const slack = payload(rows, 'slack')
    expect(slack.blocks.length).toBeLessThanOrEqual(50)
    // Both kinds of block the limits apply to are there, so the loop below checks something.
    expect(slack.blocks.filter((b: { type: string }) => b.type === 'header')).not.toHaveLength(0)
    expect(slack.blocks.filter((b: { type: string }) => b.type === 'section')).not.toHaveLength(0)
    for (const block of slack.blocks) {
      if (block.type === 'header') expect(block.text.text.length).toBeLessThanOrEqual(150)
      if (block.type === 'section') expect(block.text.text.length).toBeLessThanOrEqual(3000)
    }
    expect(slack.blocks.at(-2)).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: 'and 490 more groups' }] })
  })

  it('escape what chat would interpret: Slack mentions and links, Teams Markdown', () => {
    const rows = [groupEvent(1, 'Boom <!channel> & [click](https://evil.example) *now*')]
    const slack = JSON.stringify(payload(rows, 'slack', new Map([['101', { count: 3, topFrames: ['a.B.c(<init>)'] }]])))
    expect(slack).not.toContain('<!channel>')
    expect(slack).toContain('&lt;!channel&gt; &amp; [click]')
    expect(slack).toContain('a.B.c(&lt;init&gt;)')
    const teams = JSON.stringify(payload(rows, 'teams'))
    expect(teams).toContain('\\\\[click\\\\](https://evil.example) \\\\*now\\\\*')
  })

  it('keep a PagerDuty summary within 1024 characters, with a dedup key per rule, or per rule and group', () => {
    const long = [groupEvent(1, 'y'.repeat(3_000))]
    const page = payload(long, 'pagerduty')
    expect(page.payload.summary.length).toBeLessThanOrEqual(1024)
    expect(page.dedup_key).toBe('lazarus/alert-rule/7')
    expect(JSON.parse(formatPayload({ notification: notify(long, new Map(), '101'), format: 'pagerduty', routingKey: 'k' })).dedup_key).toBe('lazarus/alert-rule/7/group/101')
    const resolution = { ...groupEvent(2, 'rule'), state: 'resolved' as const, subject_type: 'rule' as const, subject_id: '7', text: 'Resolved: any error group over 5/min: quiet for 5 min.' }
    expect(payload([resolution], 'pagerduty')).toEqual({ routing_key: 'k'.repeat(32), event_action: 'resolve', dedup_key: 'lazarus/alert-rule/7' })
  })

  it('redact what leaves: texts, titles and frames go through the redaction rules', () => {
    const rows = [groupEvent(1, 'LoginException: password=hunter2')]
    for (const format of ['generic', 'slack', 'teams', 'pagerduty'] as const) {
      const sent = JSON.stringify(payload(rows, format, new Map([['101', { count: 1, topFrames: ['Login.check(password=hunter2)'] }]])))
      expect(sent).not.toContain('hunter2')
      // The text is there, masked: not left out.
      expect(sent, format).toContain('LoginException: password=')
    }
  })
})
