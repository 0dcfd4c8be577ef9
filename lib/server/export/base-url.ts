import 'server-only'
import { getConfig } from '@/lib/server/config'

/** Where links in exported tickets point: LAZARUS_PUBLIC_URL when set (behind a proxy), else the request's origin. */
export function publicBaseUrl(request: Request): string {
  const configured = getConfig().LAZARUS_PUBLIC_URL
  return (configured ?? new URL(request.url).origin).replace(/\/+$/, '')
}
