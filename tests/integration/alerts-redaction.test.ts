import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { ingestRow } from '../helpers/ingest-row'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'

const MINUTE = 60_000

/** A webhook leaves Lazarus like an export does: error texts quoted in alerts go through the stored redaction rules. */
describe('alert webhooks are redacted', () => {
  let db: TestDb
  let sourceId: string
  let receiver: WebhookReceiver
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 60 * MINUTE)
  const at = (ms: number) => new Date(t0.getTime() + ms)
  const fail = (ms: number, signature: string, title: string) =>
    storeBatch({ sql: db.sql, sourceId, sourceLabel: 'auth.dlq', rows: [ingestRow({ failedAt: at(ms), signature, title, errorMessage: title })] })

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('auth.dlq') RETURNING id::text`)).rows[0].id
    receiver = await startWebhookReceiver()
    // The receiver listens on loopback, which webhooks reach only when allow-listed (as for an internal receiver).
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    // Two webhooks: neither may learn the other's URL from the payload.
    await db.sql.query('INSERT INTO alert_webhooks (url) VALUES ($1), ($2)', [receiver.url, `${receiver.url}?second=T0/B0/secretpath`])
    await db.sql.query(`INSERT INTO alert_rules (kind, created_by) VALUES ('new-group', 'ops')`)
  })
  afterAll(async () => {
    await receiver?.close()
    await db?.drop()
  })

  it('a new group whose title quotes a password and an e-mail address is announced without them', async () => {
    await fail(MINUTE, 'v1:login-a', 'LoginException: password=alertsecret, user jane@example.com')
    await evaluateAlerts({ db, now: at(MINUTE), publicUrl: 'https://lazarus.example.com' })
    expect(receiver.bodies).toHaveLength(2)
    for (const body of receiver.bodies) {
      const sent = JSON.stringify(body)
      expect(sent).not.toContain('alertsecret')
      expect(sent).not.toContain('jane@example.com')
      expect(sent).not.toContain('secretpath')
      expect(body.text).toMatch(/^New error group in auth\.dlq: “LoginException: password=\[REDACTED\], user \[REDACTED:email\]”\. <https:\/\/lazarus\.example\.com\/groups\/\d+\|Open in Lazarus>$/)
      expect(body.alert).toMatchObject({ kind: 'new-group', text: body.text, subject: { type: 'group', label: 'LoginException: password=[REDACTED], user [REDACTED:email]' }, delivery: [] })
    }
  })

  it('a stored rule that no longer compiles holds alerts back instead of sending them unredacted', async () => {
    const { rows: [rule] } = await db.sql.query<{ id: string }>(
      `INSERT INTO redaction_rules (kind, value, position, updated_by) VALUES ('pattern', '(a)\\1', 999, 'dba') RETURNING id::text`,
    )
    await fail(2 * MINUTE, 'v1:login-b', 'LoginException: pw=othersecret')
    await expect(evaluateAlerts({ db, now: at(2 * MINUTE) })).rejects.toThrow(new RegExp(`redaction rule #${rule.id} .*backreferences`))
    expect(receiver.bodies).toHaveLength(2)
    // Recorded all the same: once the rule is fixed, the next evaluation after the claim ran out sends it, redacted.
    await db.sql.query('DELETE FROM redaction_rules WHERE id = $1::bigint', [rule.id])
    await evaluateAlerts({ db, now: at(4 * MINUTE) })
    expect(receiver.bodies).toHaveLength(4)
    for (const body of receiver.bodies.slice(2)) {
      expect(JSON.stringify(body)).not.toContain('othersecret')
      expect(body.alert.subject.label).toBe('LoginException: pw=[REDACTED]')
    }
  })
})
