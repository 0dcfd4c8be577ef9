import 'server-only'
import { hash, verify } from '@node-rs/argon2'

/**
 * argon2id with the OWASP minimum (19 MiB, 2 passes, 1 lane), paid at sign-in only. Sessions and API tokens are 256-bit
 * random secrets checked by SHA-256, never by argon2 (docs/decisions/0009-secrets-stored-as-sha-256.md).
 */
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS)
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password)
  } catch {
    return false
  }
}

/**
 * A hash to verify against when the account does not exist, so "no such user" costs as long as "wrong password" and
 * the timing does not tell which addresses have accounts.
 */
let decoy: Promise<string> | undefined
export const decoyHash = () => (decoy ??= hashPassword('decoy password that matches nothing'))
