import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'

const MINUTE = 60_000
const SECOND = 1_000

/** Webhook delivery is at least once: a receiver that is down, or a crash before sending, loses no alert. */
describe('alert webhook delivery', () => {
  let db: TestDb
  let sourceId: string
  let receiver: WebhookReceiver
  /** What the receiver got: each alert's text with the status it was answered with (503 until a test changes it). */
  const requests = () => receiver.requests.map((r) => ({ status: r.status, text: (r.body as { text: string }).text }))
  /** The breaches' requests alone: a quiet rule's resolution is sent (and retried) too. */
  const breaches = () => requests().filter((r) => !r.text.startsWith('Resolved:'))
  const t0 = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 3 * 60 * MINUTE)
  const at = (ms: number) => new Date(t0.getTime() + ms)
  const evaluate = (ms: number) => evaluateAlerts({ db, now: at(ms) })
  const breach = (ms: number, signature: string) =>
    storeBatch({
      sql: db.sql,
      sourceId,
      sourceLabel: 'payments.dlq',
      rows: Array.from({ length: 100 }, (_, i) => ingestRow({ failedAt: new Date(at(ms).getTime() - i * 100), signature, title: `Boom ${signature}`, failureKind: 'transient' })),
    })
  const pending = async () =>
    (await db.sql.query<{ id: string; attempts: number; next: Date | null; delivery: { ok: boolean; status: number | null }[] }>(
      `SELECT id::text, delivery_attempts AS attempts, next_delivery_at AS next, delivery FROM alert_events WHERE notified AND state = 'firing' ORDER BY id`,
    )).rows

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('payments.dlq') RETURNING id::text`)).rows[0].id
    receiver = await startWebhookReceiver()
    receiver.answer = 503
    // The receiver listens on loopback, which webhooks reach only when allow-listed (as for an internal receiver).
    await updateWebhookSettings({ db, input: { allowedHosts: ['127.0.0.1'] }, actor: 'ops' })
    const { url } = receiver
    await db.sql.query('INSERT INTO alert_webhooks (url) VALUES ($1)', [url])
    await db.sql.query(
      `INSERT INTO alert_rules (kind, source_id, threshold_per_minute, window_minutes, cooldown_minutes, created_by)
       VALUES ('source-rate', $1::bigint, 10, 5, 30, 'ops')`,
      [sourceId],
    )
  })
  afterAll(async () => {
    await receiver?.close()
    await db?.drop()
  })

  it('a webhook that refuses an alert gets it again, with backoff, until it accepts it, then never again', async () => {
    await breach(1 * MINUTE, 'v1:delivery-a')
    const first = await evaluate(1 * MINUTE)
    expect(requests()).toEqual([{ status: 503, text: expect.stringMatching(/payments\.dlq receives/) }])
    expect(first.events[0].delivery).toEqual([expect.objectContaining({ ok: false, status: 503 })])
    expect(await pending()).toEqual([expect.objectContaining({ attempts: 1, next: at(1 * MINUTE + 30 * SECOND) })])

    await evaluate(1 * MINUTE + 10 * SECOND) // not due yet
    expect(requests()).toHaveLength(1)
    await evaluate(1 * MINUTE + 30 * SECOND) // due, still refused: the next wait doubles
    expect(requests()).toHaveLength(2)
    expect(await pending()).toEqual([expect.objectContaining({ attempts: 2, next: at(2 * MINUTE + 30 * SECOND) })])

    receiver.answer = 200
    await evaluate(2 * MINUTE + 30 * SECOND)
    expect(requests().map((r) => r.status)).toEqual([503, 503, 200])
    expect(await pending()).toEqual([expect.objectContaining({ attempts: 3, next: null, delivery: [expect.objectContaining({ ok: true, status: 200 })] })])
    await evaluate(4 * MINUTE)
    expect(requests()).toHaveLength(3)
  })

  it('an alert recorded but never sent (the process died after the commit) is sent by the next evaluation', async () => {
    // What a crash between the evaluation's commit and the webhook call leaves behind.
    await db.sql.query(
      `INSERT INTO alert_events (kind, state, subject_type, subject_id, subject_label, text, notified, at, next_delivery_at)
       VALUES ('source-rate', 'firing', 'source', $1, 'payments.dlq', 'Dead letters: recorded before a crash', true, $2, $2)`,
      [sourceId, at(5 * MINUTE)],
    )
    await evaluate(5 * MINUTE + SECOND)
    expect(requests().at(-1)).toEqual({ status: 200, text: 'Dead letters: recorded before a crash' })
    expect((await pending()).every((e) => e.next === null)).toBe(true)
  })

  it('gives up after an hour, keeping the failed deliveries in the history', async () => {
    receiver.answer = 500
    await evaluate(40 * MINUTE) // the earlier breach recovers, so the next one is a new breach after the cool-down
    await breach(50 * MINUTE, 'v1:delivery-b')
    await evaluate(50 * MINUTE)
    const sent = breaches().length
    for (let ms = 50 * MINUTE; ms <= 115 * MINUTE; ms += 5 * MINUTE) await evaluate(ms)
    const last = (await pending()).at(-1)!
    expect(last.next).toBeNull()
    expect(last.delivery).toEqual([expect.objectContaining({ ok: false, status: 500 })])
    // 30 s, 1, 2, 4, 8 then every 10 minutes: a handful of attempts in the hour, none after it.
    expect(last.attempts).toBeGreaterThanOrEqual(5)
    expect(last.attempts).toBeLessThanOrEqual(14)
    expect(breaches().length - sent).toBe(last.attempts - 1)
    const after = requests().length
    await evaluate(130 * MINUTE)
    expect(requests().length).toBe(after)
  })
})
