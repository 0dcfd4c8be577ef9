export async function register() {
  if (process.env.NEXT_RUNTIME !== 'nodejs' || process.env.NEXT_PHASE === 'phase-production-build') return
  const { bootWebProcess } = await import('./lib/server/platform/runtime/boot-web')
  await bootWebProcess()
}
