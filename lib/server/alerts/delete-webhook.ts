import 'server-only'
import { getDb } from '@/lib/server/db'
import { notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'

export async function deleteWebhook({ id }: { id: string }): Promise<void> {
  const { sql } = await getDb()
  const { rowCount } = await sql.query('DELETE FROM alert_webhooks WHERE id = $1::bigint', [parseId(id, 'webhook').toString()])
  if (rowCount === 0) throw notFound(`webhook ${id}`)
}
