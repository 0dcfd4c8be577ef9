export function formatTime(iso: string | null): string {
  if (!iso) return '—'
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')
}
