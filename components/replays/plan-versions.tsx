'use client'

import { Badge } from '@/components/ui/badge'
import { Checkbox } from '@/components/ui/fields'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { formatVersion } from '@/packages/guard/src/entity-version'
import type { ReplayPlanVersionsDto } from '@/lib/shared/schemas/replay'

/**
 * Entity versions in a replay plan (docs/ARCHITECTURE.md#entity-versions): per entity, whether the selection holds
 * several versions and whether newer ones are stored, and the choice "only the newest per entity".
 */
export function PlanVersions({ versions, onlyNewest, onOnlyNewest }: { versions: ReplayPlanVersionsDto; onlyNewest: boolean; onOnlyNewest: (value: boolean) => void }) {
  const v = versions
  const show = (n: number) => formatVersion(n, v.type)
  return (
    <div data-testid="plan-versions">
      <p className="text-zinc-700">
        {plural(v.messages, 'message')} of {plural(v.entities, 'entity', 'entities')} carry versions
        {v.withoutVersion > 0 && <span className="text-zinc-500"> ({formatCount(v.withoutVersion)} without one{v.unparsable > 0 ? `, ${formatCount(v.unparsable)} unparsable` : ''})</span>}.{' '}
        <span data-testid="versions-several" className={v.entitiesWithSeveral > 0 ? 'font-medium text-amber-800' : undefined}>
          {plural(v.entitiesWithSeveral, 'entity', 'entities')} with several versions
        </span>
        ,{' '}
        <span data-testid="versions-newer" className={v.entitiesWithNewerStored > 0 ? 'font-medium text-amber-800' : undefined}>
          {formatCount(v.entitiesWithNewerStored)} with a newer version stored
        </span>
        .
      </p>
      {v.sample.length > 0 && (
        <ul className="mt-1.5 space-y-0.5 text-xs" aria-label="Entities with several or newer versions">
          {v.sample.map((e) => (
            <li key={`${e.sourceId}|${e.entityKey}`} className="flex min-w-0 items-baseline gap-2">
              <span className="max-w-[30%] shrink-0 truncate font-mono text-zinc-800" title={visibleText(e.entityKey)}>
                {visibleText(e.entityKey)}
              </span>
              <span className="min-w-0 truncate font-mono text-zinc-600" title={e.versions.map(show).join(', ')}>
                {e.versions.map(show).join(' · ')}
              </span>
              {e.newerStored > 0 && e.newestStored !== null && (
                <Badge tone="amber" className="ml-auto shrink-0">
                  newer stored: {show(e.newestStored)}
                </Badge>
              )}
            </li>
          ))}
        </ul>
      )}
      <label className="mt-2 flex items-center gap-2">
        <Checkbox checked={onlyNewest} onChange={(e) => onOnlyNewest(e.target.checked)} aria-describedby="only-newest-hint" disabled={v.older === 0 && !onlyNewest} />
        <span className="font-medium">Only the newest per entity</span>
      </label>
      <p id="only-newest-hint" className="mt-0.5 text-xs text-zinc-500">
        {v.older === 0 && !onlyNewest
          ? 'No entity has an older version in this selection.'
          : `${plural(v.older, 'older version')} ${onlyNewest ? 'are' : 'would be'} not published but resolved as “superseded by version V” when the replay starts.`}
      </p>
    </div>
  )
}
