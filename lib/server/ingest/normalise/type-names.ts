import 'server-only'

/**
 * The last non-empty part of `text` between separators ("ListenerExecutionFailedException" of
 * "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException"), or null when every part is empty.
 * Read backwards without splitting: the drainer asks this of every type name of every message.
 */
export function lastSegment(text: string, separators: string): string | null {
  let end = text.length
  for (let i = text.length - 1; i >= -1; i--) {
    if (i >= 0 && !separators.includes(text[i])) continue
    if (end > i + 1) return text.slice(i + 1, end)
    end = i
  }
  return null
}

/** A type name without the assembly of an assembly-qualified .NET name ("Ns.Type, Assembly"), trimmed. */
export function withoutAssembly(type: string): string {
  const comma = type.indexOf(',')
  return (comma === -1 ? type : type.slice(0, comma)).trim()
}
