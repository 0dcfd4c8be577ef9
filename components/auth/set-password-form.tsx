'use client'

import { useEffect, useState, type FormEvent } from 'react'
import { Button } from '@/components/ui/button'
import { Field, Input } from '@/components/ui/fields'
import { apiSend, errorMessage } from '@/lib/client/api'

/**
 * The first admin (mode `setup`, with the link printed on the console) or an invited user's password (mode `invite`,
 * with the link an admin passed on). The token travels in the URL's fragment, which browsers never send to a server
 * or in a Referer, and leaves the address bar once read.
 */
export function SetPasswordForm({ mode }: { mode: 'setup' | 'invite' }) {
  const [token, setToken] = useState<string | null>(null)
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [confirm, setConfirm] = useState('')
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<string | null>(null)

  useEffect(() => {
    // The one-time token is in the URL fragment, which only the browser sees: it is read once after mount, and taken
    // out of the address bar so it stays out of the history.
    const found = new URLSearchParams(window.location.hash.slice(1)).get('token')
    // eslint-disable-next-line react-hooks/set-state-in-effect -- state from the fragment, an external system, once
    setToken(found ?? '')
    if (found) window.history.replaceState(null, '', window.location.pathname)
  }, [])

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    if (password !== confirm) return setFailure('The passwords differ')
    setBusy(true)
    setFailure(null)
    try {
      if (mode === 'setup') await apiSend('POST', '/api/auth/setup', { token, email, password })
      else await apiSend('POST', '/api/auth/set-password', { token, password })
      window.location.assign(mode === 'setup' ? '/settings/access' : '/')
    } catch (err) {
      setFailure(errorMessage(err))
      setBusy(false)
    }
  }

  const title = mode === 'setup' ? 'Create the first admin' : 'Set your password'
  if (token === '') {
    return (
      <div className="space-y-2">
        <h1 className="text-base font-semibold text-zinc-900">{title}</h1>
        <p className="text-xs text-zinc-600">
          {mode === 'setup'
            ? 'Open the whole link Lazarus printed on its console at start-up (it ends in #token=…).'
            : 'Open the whole link an admin gave you (it ends in #token=…).'}
        </p>
      </div>
    )
  }
  return (
    <form onSubmit={submit} className="space-y-3">
      <h1 className="text-base font-semibold text-zinc-900">{title}</h1>
      {mode === 'setup' && <p className="text-xs text-zinc-600">This account administers Lazarus: it adds people, sources and settings.</p>}
      {failure && (
        <p role="alert" className="rounded-md bg-red-50 px-2.5 py-2 text-xs break-words text-red-800">
          {failure}
        </p>
      )}
      {mode === 'setup' && (
        <Field label="E-mail address">
          <Input type="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} className="h-8" />
        </Field>
      )}
      <Field label="Password" hint="At least 12 characters">
        <Input type="password" autoComplete="new-password" required minLength={12} autoFocus={mode !== 'setup'} value={password} onChange={(e) => setPassword(e.target.value)} className="h-8" />
      </Field>
      <Field label="Password again">
        <Input type="password" autoComplete="new-password" required minLength={12} value={confirm} onChange={(e) => setConfirm(e.target.value)} className="h-8" />
      </Field>
      <Button type="submit" variant="primary" size="md" disabled={busy || token === null} className="w-full">
        {busy ? 'Saving…' : mode === 'setup' ? 'Create admin and sign in' : 'Set password and sign in'}
      </Button>
    </form>
  )
}
