import 'server-only'
import { getDb } from '@/lib/server/db'
import { notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'

/** Deletes a rule; its history stays (rule_id becomes NULL). */
export async function deleteAlertRule({ id }: { id: string }): Promise<void> {
  const { sql } = await getDb()
  const { rowCount } = await sql.query('DELETE FROM alert_rules WHERE id = $1::bigint', [parseId(id, 'alert rule').toString()])
  if (rowCount === 0) throw notFound(`alert rule ${id}`)
}
