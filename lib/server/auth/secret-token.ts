import 'server-only'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** 32 random bytes, URL-safe; `prefix` marks the kind (`lzr_` for API tokens, so secret scanners can find leaks). */
export function newSecret(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url')
}

/**
 * What the database keeps of a session, token or link secret. A fast hash is enough: the secret is 256 random
 * bits, not a password, and a slow hash on every request would cost more than the request.
 */
export function secretHash(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest()
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}
