/**
 * What a browser tab calls an error: the error type's last name ("InvalidOperationException" of
 * "System.InvalidOperationException"), else the start of `fallback`, at most 60 characters.
 */
export function shortErrorName(errorType: string | null, fallback: string): string {
  const name = errorType?.split(/[.:$/\\]/).filter(Boolean).pop() ?? fallback
  return name.length > 60 ? `${name.slice(0, 59)}…` : name
}
