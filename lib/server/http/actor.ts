import 'server-only'

/**
 * Who is acting, for the audit log. There is no sign-in yet: the UI sends the name the operator typed once
 * (kept in the browser) as `x-lazarus-user`; scripts may do the same. Anything else is "anonymous".
 */
export function actorOf(request: Request): string {
  const raw = request.headers.get('x-lazarus-user')?.trim() ?? ''
  const clean = raw.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 128)
  return clean || 'anonymous'
}
