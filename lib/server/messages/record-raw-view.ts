import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'

/**
 * Every time someone sees a message unredacted (its detail, or its raw body downloaded) it is in the audit log
 * (docs/security.md, "Roles": each raw view audited). One row per view; reads are not batched, so the entry is there
 * before the response is.
 */
export async function recordRawView({ db, actor, messageId, what }: { db: Db; actor: string; messageId: string; what: 'detail' | 'body' }): Promise<void> {
  await db.sql.transaction((tx) =>
    recordAudit({
      sql: tx,
      actor,
      action: 'message.raw-viewed',
      subject: { type: 'message', id: messageId },
      summary: what === 'body' ? `Downloaded the raw body of message #${messageId}` : `Viewed message #${messageId} unredacted`,
      details: { what },
    }),
  )
}
