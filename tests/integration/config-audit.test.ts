import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as sources from '@/app/api/sources/route'
import * as source from '@/app/api/sources/[id]/route'
import * as rules from '@/app/api/alerts/rules/route'
import * as rule from '@/app/api/alerts/rules/[id]/route'
import * as webhooks from '@/app/api/alerts/webhooks/route'
import * as webhook from '@/app/api/alerts/webhooks/[id]/route'
import * as redaction from '@/app/api/settings/redaction/route'
import * as webhookSettings from '@/app/api/settings/webhooks/route'
import * as replayTargets from '@/app/api/settings/replay-targets/route'
import { createTestUser, type TestUser } from '../helpers/auth'
import { callRoute, type RouteModule } from '../helpers/call-route'
import { createTestDb, type TestDb } from '../helpers/test-db'

/* Every change of configuration is in the audit log with who, before and after (docs/security.md). */

describe('configuration changes are audited with before and after', () => {
  let db: TestDb
  let admin: TestUser
  const call = async (module: RouteModule, method: string, path: string, body?: unknown, params: Record<string, string> = {}) => {
    const response = await callRoute(
      module,
      method as 'GET',
      new Request(`http://lazarus.test${path}`, { method, headers: { authorization: admin.authorization, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }),
      params,
    )
    const text = await response.text()
    expect(response.status, text).toBeLessThan(300)
    return text ? JSON.parse(text) : null
  }
  const entries = async () =>
    (await db.sql.query<{ actor: string; action: string; subject_type: string; subject_id: string | null; details: { before: unknown; after: unknown } }>(
      `SELECT actor, action, subject_type, subject_id, details FROM audit_log WHERE action NOT IN ('user.created', 'token.created') ORDER BY id`,
    )).rows

  beforeAll(async () => {
    db = await createTestDb()
    admin = await createTestUser(db, 'cfg-admin', [{ role: 'admin' }])
  })
  afterAll(async () => db?.drop())

  it('sources, alert rules, webhooks, redaction rules and allow-lists', async () => {
    const created = await call(sources, 'POST', '/api/sources', { queue: 'audited.dlq', enabled: false })
    await call(source, 'PATCH', `/api/sources/${created.id}`, { orderSensitive: true }, { id: created.id })
    await call(source, 'DELETE', `/api/sources/${created.id}`, undefined, { id: created.id })
    const newRule = await call(rules, 'POST', '/api/alerts/rules', { kind: 'new-group' })
    await call(rule, 'PATCH', `/api/alerts/rules/${newRule.id}`, { enabled: false }, { id: newRule.id })
    await call(rule, 'DELETE', `/api/alerts/rules/${newRule.id}`, undefined, { id: newRule.id })
    const hook = await call(webhooks, 'POST', '/api/alerts/webhooks', { url: 'https://93.184.215.14/services/T000/B000/secretpath' })
    await call(webhook, 'DELETE', `/api/alerts/webhooks/${hook.id}`, undefined, { id: hook.id })
    const current = await call(redaction, 'GET', '/api/settings/redaction')
    await call(redaction, 'PUT', '/api/settings/redaction', { rules: [...current.rules.map((r: { kind: string; value: string; enabled: boolean }) => ({ kind: r.kind, value: r.value, enabled: r.enabled })), { kind: 'key', value: 'iban', enabled: true }] })
    await call(webhookSettings, 'PUT', '/api/settings/webhooks', { allowedHosts: ['10.1.2.3'] })
    await call(replayTargets, 'PUT', '/api/settings/replay-targets', { customTargetPatterns: ['orders.*'] })

    const log = await entries()
    expect(log.map((e) => e.action)).toEqual([
      'source.created', 'source.updated', 'source.deleted',
      'alert-rule.created', 'alert-rule.updated', 'alert-rule.deleted',
      'webhook.created', 'webhook.deleted',
      'settings.updated', 'settings.updated', 'settings.updated',
    ])
    for (const e of log) expect(e.actor).toBe(admin.actor)
    expect(log[1].details).toMatchObject({ before: { queue: 'audited.dlq', orderSensitive: false }, after: { orderSensitive: true } })
    expect(log[2].details).toMatchObject({ before: { queue: 'audited.dlq' }, after: null })
    expect(log[4].details).toMatchObject({ before: { enabled: true }, after: { enabled: false } })
    // A webhook URL is a credential: the log keeps its origin only.
    expect(JSON.stringify(log[6].details)).not.toContain('secretpath')
    expect((log[8].details.after as { value: string }[]).some((r) => r.value === 'iban')).toBe(true)
    expect((log[8].details.before as { value: string }[]).some((r) => r.value === 'iban')).toBe(false)
    expect(log[9].details).toEqual({ before: { allowedHosts: [] }, after: { allowedHosts: ['10.1.2.3'] } })
    expect(log[10].details).toEqual({ before: { customTargetPatterns: [] }, after: { customTargetPatterns: ['orders.*'] } })
  })
})
