import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getConfig, type Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import type { Prisma } from '@/lib/generated/prisma/client'
import type { TraceSettingsDto, UpdateTraceSettingsInput } from '@/lib/shared/schemas/trace-settings'

const ROW = { id: 1 }

type Stored = { urlTemplate: string | null; updatedAt: Date; updatedBy: string | null } | null

const readStored = (prisma: Pick<Prisma.TransactionClient, 'traceSettings'>): Promise<Stored> => prisma.traceSettings.findUnique({ where: ROW })

/**
 * The admin's template wins over LAZARUS_TRACE_URL_TEMPLATE: the environment gives the default a deployment ships with,
 * and someone who changes it in Settings sees the change take effect. Clearing it falls back to the environment's.
 */
const toDto = (stored: Stored, config: Pick<Config, 'LAZARUS_TRACE_URL_TEMPLATE'>): TraceSettingsDto => {
  const environmentTemplate = config.LAZARUS_TRACE_URL_TEMPLATE ?? null
  return {
    urlTemplate: stored?.urlTemplate ?? null,
    environmentTemplate,
    effectiveTemplate: stored?.urlTemplate ?? environmentTemplate,
    updatedAt: stored?.updatedAt.toISOString() ?? null,
    updatedBy: stored?.updatedBy ?? null,
  }
}

export type GetTraceSettingsOptions = { db: Pick<Db, 'prisma'>; config?: Pick<Config, 'LAZARUS_TRACE_URL_TEMPLATE'> }

/** GET /api/settings/traces (admins). */
export async function getTraceSettings({ db, config = getConfig() }: GetTraceSettingsOptions): Promise<TraceSettingsDto> {
  return toDto(await readStored(db.prisma), config)
}

/** The template links use now, or null (read per request, so an edit applies at once in every process). */
export async function effectiveTraceTemplate(options: GetTraceSettingsOptions): Promise<string | null> {
  return (await getTraceSettings(options)).effectiveTemplate
}

export type UpdateTraceSettingsOptions = { db: Db; input: UpdateTraceSettingsInput; actor: string; config?: Pick<Config, 'LAZARUS_TRACE_URL_TEMPLATE'> }

/** PUT /api/settings/traces (admins): sets or clears the stored template; audited with its before and after. */
export function updateTraceSettings({ db, input, actor, config = getConfig() }: UpdateTraceSettingsOptions): Promise<TraceSettingsDto> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    const before = await readStored(prisma)
    const written = { urlTemplate: input.urlTemplate, updatedAt: new Date(), updatedBy: actor }
    await prisma.traceSettings.upsert({ where: ROW, create: { ...ROW, ...written }, update: written })
    const after = toDto(await readStored(prisma), config)
    await recordConfigChange({
      sql,
      actor,
      action: 'settings.updated',
      subject: { type: 'settings', id: 'traces' },
      summary: input.urlTemplate === null ? 'Cleared the trace link template' : 'Changed the trace link template',
      before: { urlTemplate: before?.urlTemplate ?? null },
      after: { urlTemplate: after.urlTemplate },
    })
    return after
  })
}
