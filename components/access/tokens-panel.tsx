'use client'

import { useState, type FormEvent } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Field, Input, Select } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { EmptyState, ErrorState, InlineError } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { useCreateToken, useRevokeToken, useTokens } from '@/lib/client/use-access'
import { useCan, useSession } from '@/lib/client/use-session'
import { atLeast, ROLES, type Role } from '@/lib/shared/roles'
import type { ApiTokenDto } from '@/lib/shared/schemas/user'
import { SecretOnce } from './secret-once'

const COLUMNS: DataColumn[] = [{ header: 'Name' }, { header: 'Owner', width: 'w-56' }, { header: 'Grants', width: 'w-56' }, { header: 'Expires', width: 'w-28' }, { header: 'Last used', width: 'w-28' }, { width: 'w-24' }]

type Kind = Role | 'metrics' | 'guard'

function grantText(t: ApiTokenDto): string {
  if (t.scope === 'metrics') return 'metrics scope'
  if (t.scope === 'guard') return `guard · ${t.guardQueue?.queue ?? ''}`
  return t.sourcePattern ? `${t.role} · ${t.sourcePattern}` : (t.role ?? '')
}

function CreateTokenForm() {
  const session = useSession()
  const isAdmin = useCan('admin')
  const create = useCreateToken()
  const best = (session?.roles ?? []).reduce<Role>((acc, r) => (atLeast(r.role, acc) ? r.role : acc), 'viewer')
  const kinds: { value: Kind; label: string }[] = [
    ...ROLES.filter((r) => atLeast(best, r)).map((r) => ({ value: r as Kind, label: `${r} (API)` })),
    ...(atLeast(best, 'operator') ? [{ value: 'guard' as Kind, label: 'pause guard (one queue)' }] : []),
    ...(isAdmin ? [{ value: 'metrics' as Kind, label: 'metrics scrape' }] : []),
  ]
  const [name, setName] = useState('')
  const [kind, setKind] = useState<Kind>('viewer')
  const [pattern, setPattern] = useState('')
  const [queue, setQueue] = useState('')
  const [days, setDays] = useState('90')
  const [secret, setSecret] = useState<string | null>(null)
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const grant =
      kind === 'metrics' ? { scope: 'metrics' as const } : kind === 'guard' ? { scope: 'guard' as const, guardQueue: queue.trim() } : { role: kind, sourcePattern: pattern.trim() || null }
    create.mutate(
      { name: name.trim(), ...grant, expiresInDays: days === 'never' ? null : Number(days) },
      {
        onSuccess: (result) => {
          setSecret(result.token)
          setName('')
        },
      },
    )
  }
  if (secret) {
    return <SecretOnce label="New API token" value={secret} note="Send it as Authorization: Bearer <token>. It is shown only now; Lazarus keeps only its hash." onDone={() => setSecret(null)} />
  }
  return (
    <form onSubmit={submit} className="flex flex-wrap items-end gap-3">
      <Field label="Name">
        <Input aria-label="Token name" required maxLength={100} placeholder="ci-nightly-export" value={name} onChange={(e) => setName(e.target.value)} className="w-48" />
      </Field>
      <Field label="Acts as">
        <Select aria-label="Token kind" value={kind} options={kinds} onChange={(e) => setKind(e.target.value as Kind)} />
      </Field>
      {kind === 'guard' ? (
        <Field label="Queue the guard consumes">
          <Input aria-label="Guard queue" required value={queue} onChange={(e) => setQueue(e.target.value)} className="w-44 font-mono text-xs" placeholder="orders.work" />
        </Field>
      ) : kind !== 'metrics' ? (
        <Field label="Only sources matching">
          <Input aria-label="Token source pattern" value={pattern} disabled={kind === 'admin'} onChange={(e) => setPattern(e.target.value)} className="w-36 font-mono text-xs" placeholder="all sources" />
        </Field>
      ) : null}
      <Field label="Expires">
        <Select
          aria-label="Expires"
          value={days}
          options={[
            { value: '30', label: 'in 30 days' },
            { value: '90', label: 'in 90 days' },
            { value: '365', label: 'in a year' },
            ...(isAdmin ? [{ value: 'never', label: 'never' }] : []),
          ]}
          onChange={(e) => setDays(e.target.value)}
        />
      </Field>
      <Button type="submit" variant="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create token'}
      </Button>
      {create.error && <InlineError error={create.error} />}
    </form>
  )
}

export function TokensPanel() {
  const { data, error, isPending, refetch } = useTokens()
  const revoke = useRevokeToken()
  const tokens = data?.tokens ?? []
  return (
    <Panel title="API tokens" bodyClassName="p-0">
      {error ? (
        <ErrorState className="m-3" title="Could not load tokens" error={error} onRetry={() => void refetch()} />
      ) : (
        <>
          <DataTable label="API tokens" columns={COLUMNS} pending={isPending} skeletonRows={2}>
            {tokens.map((t) => (
              <tr key={t.id} data-token={t.name} className={t.revokedAt ? 'text-zinc-400' : undefined}>
                <td className="truncate" title={t.name}>
                  {t.name}
                  {t.revokedAt && (
                    <Badge className="ml-1.5" tone="zinc">
                      revoked
                    </Badge>
                  )}
                </td>
                <td className="truncate text-xs" title={t.owner.email}>
                  {t.owner.email}
                </td>
                <td className="truncate font-mono text-xs">{grantText(t)}</td>
                <td className="text-zinc-600">{t.expiresAt ? <RelativeTime iso={t.expiresAt} /> : 'never'}</td>
                <td className="text-zinc-600">
                  <RelativeTime iso={t.lastUsedAt} />
                </td>
                <td className="text-right">
                  {!t.revokedAt && (
                    <Button variant="ghost" disabled={revoke.isPending} onClick={() => revoke.mutate(t.id)}>
                      Revoke
                    </Button>
                  )}
                </td>
              </tr>
            ))}
          </DataTable>
          {!isPending && tokens.length === 0 && (
            <div className="p-3">
              <EmptyState title="No API tokens">Scripts, CI jobs, Prometheus and pause guards sign in with a token (Authorization: Bearer).</EmptyState>
            </div>
          )}
        </>
      )}
      {revoke.error && (
        <p className="px-3 pt-2">
          <InlineError error={revoke.error} />
        </p>
      )}
      <div className="border-t border-zinc-100 p-3">
        <CreateTokenForm />
      </div>
    </Panel>
  )
}
