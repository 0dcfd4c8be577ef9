'use client'

import { useSyncExternalStore } from 'react'

/*
 * Who is operating this browser, for the audit log. There is no sign-in: the operator types a name once, it is
 * kept in localStorage and sent as `x-lazarus-user` with every mutating request (lib/client/api.ts).
 */

const STORAGE_KEY = 'lazarus.operator'
export const OPERATOR_MAX_LENGTH = 128

const listeners = new Set<() => void>()

/**
 * HTTP header values are Latin-1: control characters and anything outside it are dropped (fetch would refuse
 * to send them), and surrounding space is trimmed.
 */
export function cleanOperatorName(raw: string): string {
  return raw
    .replace(/[^\u0020-\u007e\u00a0-\u00ff]/g, '')
    .trim()
    .slice(0, OPERATOR_MAX_LENGTH)
}

export function getOperator(): string {
  if (typeof window === 'undefined') return ''
  try {
    return window.localStorage.getItem(STORAGE_KEY) ?? ''
  } catch {
    return ''
  }
}

export function setOperator(name: string): void {
  const clean = cleanOperatorName(name)
  try {
    if (clean) window.localStorage.setItem(STORAGE_KEY, clean)
    else window.localStorage.removeItem(STORAGE_KEY)
  } catch {
    // Storage disabled (private mode): the name lasts until reload.
  }
  for (const l of listeners) l()
}

/** The header for mutating requests; empty when no name is set (the API then records "anonymous"). */
export function operatorHeaders(): Record<string, string> {
  const name = cleanOperatorName(getOperator())
  return name ? { 'x-lazarus-user': name } : {}
}

function subscribe(listener: () => void) {
  listeners.add(listener)
  // Another tab changed the name.
  const onStorage = (e: StorageEvent) => e.key === STORAGE_KEY && listener()
  window.addEventListener('storage', onStorage)
  return () => {
    listeners.delete(listener)
    window.removeEventListener('storage', onStorage)
  }
}

/** The operator's name ('' when unset, and during server rendering). */
export function useOperator(): string {
  return useSyncExternalStore(subscribe, getOperator, () => '')
}
