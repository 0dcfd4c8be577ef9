import { Badge, type Tone } from '@/components/ui/badge'
import type { Role } from '@/lib/shared/roles'

const TONE: Record<Role, Tone> = { admin: 'violet', operator: 'blue', viewer: 'zinc' }

export function RoleBadges({ roles }: { roles: { role: Role; sourcePattern: string | null; origin?: 'manual' | 'group' }[] }) {
  if (roles.length === 0) return <span className="text-xs text-zinc-400">no role</span>
  return (
    <span className="flex flex-wrap gap-1">
      {roles.map((r, i) => (
        <Badge key={i} tone={TONE[r.role]} title={r.origin === 'group' ? 'From the identity provider\u2019s groups' : undefined}>
          {r.role}
          {r.sourcePattern ? ` · ${r.sourcePattern}` : ''}
          {r.origin === 'group' ? ' ·g' : ''}
        </Badge>
      ))}
    </span>
  )
}
