'use client'

import { useState, type FormEvent } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Field, Input, Select } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { ErrorState, InlineError } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { useCreateUser, useUpdateUser, useUsers } from '@/lib/client/use-access'
import { useSession } from '@/lib/client/use-session'
import { ROLES, type Role } from '@/lib/shared/roles'
import type { UserDto } from '@/lib/shared/schemas/user'
import { RoleBadges } from './role-badges'
import { SecretOnce } from './secret-once'

const COLUMNS: DataColumn[] = [{ header: 'User' }, { header: 'Sign-in', width: 'w-24' }, { header: 'Roles', width: 'w-[32%]' }, { header: 'Last sign-in', width: 'w-32' }, { width: 'w-44' }]

const ROLE_OPTIONS = ROLES.map((r) => ({ value: r, label: r }))

/** One role binding as the form edits it: a role and an optional queue pattern. */
function RoleFields({ role, pattern, onChange }: { role: Role; pattern: string; onChange: (role: Role, pattern: string) => void }) {
  return (
    <div className="flex items-end gap-2">
      <Field label="Role">
        <Select aria-label="Role" value={role} options={ROLE_OPTIONS} onChange={(e) => onChange(e.target.value as Role, e.target.value === 'admin' ? '' : pattern)} />
      </Field>
      <Field label="Only sources matching" hint="e.g. billing.* (empty: all)">
        <Input aria-label="Source pattern" value={pattern} disabled={role === 'admin'} placeholder="all sources" onChange={(e) => onChange(role, e.target.value)} className="w-40 font-mono text-xs" />
      </Field>
    </div>
  )
}

function InviteForm() {
  const create = useCreateUser()
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Role>('viewer')
  const [pattern, setPattern] = useState('')
  const [link, setLink] = useState<string | null>(null)
  const submit = (e: FormEvent) => {
    e.preventDefault()
    create.mutate(
      { email, roles: [{ role, sourcePattern: pattern.trim() || null }] },
      {
        onSuccess: (result) => {
          setLink(result.setPasswordUrl)
          setEmail('')
        },
      },
    )
  }
  if (link) {
    return <SecretOnce label="Invitation link" value={link} note="Send it to the person: it lets them set their password once, within 7 days. It is not shown again." onDone={() => setLink(null)} />
  }
  return (
    <form onSubmit={submit} className="flex flex-wrap items-end gap-3">
      <Field label="E-mail address">
        <Input aria-label="New user's e-mail address" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} className="w-64" />
      </Field>
      <RoleFields role={role} pattern={pattern} onChange={(r, p) => (setRole(r), setPattern(p))} />
      <Button type="submit" variant="primary" disabled={create.isPending}>
        {create.isPending ? 'Inviting…' : 'Invite'}
      </Button>
      {create.error && <InlineError error={create.error} />}
    </form>
  )
}

function EditRoles({ user, onDone }: { user: UserDto; onDone: () => void }) {
  const update = useUpdateUser()
  const manual = user.roles.filter((r) => r.origin === 'manual')
  const [role, setRole] = useState<Role | ''>(manual[0]?.role ?? '')
  const [pattern, setPattern] = useState(manual[0]?.sourcePattern ?? '')
  const save = () =>
    update.mutate(
      { id: user.id, input: { roles: role ? [{ role, sourcePattern: pattern.trim() || null }] : [] } },
      { onSuccess: onDone },
    )
  return (
    <div className="flex flex-wrap items-end gap-3 bg-zinc-50 px-3 py-2">
      <Field label="Role">
        <Select aria-label="Role" value={role} placeholder="no role" options={ROLE_OPTIONS} onChange={(e) => setRole(e.target.value as Role | '')} />
      </Field>
      <Field label="Only sources matching" hint="empty: all sources">
        <Input aria-label="Source pattern" value={pattern} disabled={role === 'admin' || role === ''} onChange={(e) => setPattern(e.target.value)} className="w-40 font-mono text-xs" />
      </Field>
      <Button variant="primary" onClick={save} disabled={update.isPending}>
        Save
      </Button>
      <Button variant="ghost" onClick={onDone}>
        Cancel
      </Button>
      {user.roles.some((r) => r.origin === 'group') && <span className="text-xs text-zinc-500">Roles marked ·g come from the identity provider&rsquo;s groups and follow them.</span>}
      {update.error && <InlineError error={update.error} />}
    </div>
  )
}

export function UsersPanel() {
  const session = useSession()
  const { data, error, isPending, refetch } = useUsers(true)
  const update = useUpdateUser()
  const [editing, setEditing] = useState<string | null>(null)
  return (
    <Panel title="People" bodyClassName="space-y-3 p-0">
      {error ? (
        <ErrorState className="m-3" title="Could not load users" error={error} onRetry={() => void refetch()} />
      ) : (
        <DataTable label="Users" columns={COLUMNS} pending={isPending} skeletonRows={3}>
          {data?.users.map((u) => (
            <UserRows key={u.id} user={u} self={u.id === session?.user?.id} editing={editing === u.id} onEdit={() => setEditing(editing === u.id ? null : u.id)} onToggle={() => update.mutate({ id: u.id, input: { disabled: !u.disabled } })} />
          ))}
        </DataTable>
      )}
      {update.error && (
        <p className="px-3">
          <InlineError error={update.error} />
        </p>
      )}
      <div className="border-t border-zinc-100 p-3">
        <InviteForm />
      </div>
    </Panel>
  )
}

function UserRows({ user, self, editing, onEdit, onToggle }: { user: UserDto; self: boolean; editing: boolean; onEdit: () => void; onToggle: () => void }) {
  return (
    <>
      <tr data-user={user.email} className={user.disabled ? 'text-zinc-400' : undefined}>
        <td className="truncate" title={user.email}>
          {user.email}
          {self && <span className="ml-1.5 text-xs text-zinc-400">(you)</span>}
          {user.disabled && (
            <Badge className="ml-1.5" tone="zinc">
              disabled
            </Badge>
          )}
          {user.invited && (
            <Badge className="ml-1.5" tone="amber">
              invited
            </Badge>
          )}
        </td>
        <td className="text-xs text-zinc-600">{user.authSource === 'local' ? 'password' : user.authSource === 'oidc' ? 'SSO' : 'proxy'}</td>
        <td>
          <RoleBadges roles={user.roles} />
        </td>
        <td className="text-zinc-600">
          <RelativeTime iso={user.lastSignInAt} />
        </td>
        <td className="text-right">
          <Button variant="ghost" aria-expanded={editing} onClick={onEdit}>
            {editing ? 'Close' : 'Roles'}
          </Button>
          {!self && (
            <Button variant="ghost" onClick={onToggle}>
              {user.disabled ? 'Enable' : 'Disable'}
            </Button>
          )}
        </td>
      </tr>
      {editing && (
        <tr>
          <td colSpan={COLUMNS.length} className="h-auto! p-0!">
            <EditRoles user={user} onDone={onEdit} />
          </td>
        </tr>
      )}
    </>
  )
}
