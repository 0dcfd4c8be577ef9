import { EmptyState } from '@/components/ui/states'
import { PERMISSIONS, type Permission } from '@/lib/shared/roles'

/** A page the caller's role does not open. */
export function Forbidden({ permission }: { permission: Permission }) {
  return (
    <EmptyState title="Not for your role">
      This page needs the {PERMISSIONS[permission] ?? permission} role. Ask an admin if you need it.
    </EmptyState>
  )
}
