import 'server-only'

/**
 * Remembers results per input for the normaliser's costly passes: a flood of one failure repeats its texts. Bounded
 * (oldest entry out past `entries`), and inputs longer than `maxKeyLength` are computed every time, so hostile input
 * cannot pin memory.
 */
export class BoundedCache<V> {
  private readonly map = new Map<string, V>()

  constructor(private readonly options: { entries: number; maxKeyLength: number }) {}

  get(key: string, compute: () => V): V {
    // One lookup on a hit (every message of a flood); has() only to tell a stored undefined from a miss.
    const cached = this.map.get(key)
    if (cached !== undefined || this.map.has(key)) return cached as V
    const value = compute()
    if (key.length > this.options.maxKeyLength) return value
    if (this.map.size >= this.options.entries) this.map.delete(this.map.keys().next().value as string)
    this.map.set(key, value)
    return value
  }
}
