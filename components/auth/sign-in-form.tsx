'use client'

import { useState, type FormEvent } from 'react'
import { Button } from '@/components/ui/button'
import { Field, Input } from '@/components/ui/fields'
import { apiSend, errorMessage } from '@/lib/client/api'
import type { SessionDto } from '@/lib/shared/schemas/user'

type SignInFormProps = { methods: SessionDto['methods']; needsSetup: boolean; next: string; error: string | null; expired: boolean }

export function SignInForm({ methods, needsSetup, next, error, expired }: SignInFormProps) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<string | null>(error)

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setFailure(null)
    try {
      await apiSend('POST', '/api/auth/sign-in', { email, password })
      window.location.assign(next)
    } catch (err) {
      setFailure(errorMessage(err))
      setBusy(false)
    }
  }

  return (
    <div className="space-y-4">
      <h1 className="text-base font-semibold text-zinc-900">Sign in</h1>
      {expired && !failure && <p className="rounded-md bg-amber-50 px-2.5 py-2 text-xs text-amber-900">Your session ended. Sign in again to continue.</p>}
      {needsSetup && (
        <p className="rounded-md bg-sky-50 px-2.5 py-2 text-xs text-sky-900">
          No one has an account yet. Open the one-time setup link Lazarus printed on its console at start-up to create the first admin (or
          start it with <code className="font-mono">LAZARUS_ADMIN_EMAIL</code> and <code className="font-mono">LAZARUS_ADMIN_PASSWORD</code>).
        </p>
      )}
      {failure && (
        <p role="alert" className="rounded-md bg-red-50 px-2.5 py-2 text-xs break-words text-red-800">
          {failure}
        </p>
      )}
      {methods.oidc && (
        <a
          href={`/api/auth/oidc/start?returnTo=${encodeURIComponent(next)}`}
          className="flex h-8 w-full items-center justify-center rounded-md border border-brand bg-brand text-[13px] font-medium text-white hover:brightness-110"
        >
          Sign in with {methods.oidc.name}
        </a>
      )}
      {methods.oidc && methods.local && <p className="text-center text-xs text-zinc-400">or</p>}
      {methods.local && (
        <form onSubmit={submit} className="space-y-3">
          <Field label="E-mail address">
            <Input type="email" name="email" autoComplete="username" required autoFocus={!methods.oidc} value={email} onChange={(e) => setEmail(e.target.value)} className="h-8" />
          </Field>
          <Field label="Password">
            <Input type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} className="h-8" />
          </Field>
          <Button type="submit" variant={methods.oidc ? 'default' : 'primary'} size="md" disabled={busy} className="w-full">
            {busy ? 'Signing in…' : 'Sign in'}
          </Button>
        </form>
      )}
      {!methods.local && !methods.oidc && (
        <p className="text-xs text-zinc-600">This Lazarus signs people in through the proxy in front of it; your request did not come through it.</p>
      )}
    </div>
  )
}
