import { extractEntityKey, type KeyedMessage } from './entity-key'
import type { EntityKeyRule, GuardPause, PauseList } from './protocol'

/**
 * The pauses one guard honours: the last pause list read from GET /api/pauses, and nothing else.
 *
 * Control events are not applied here: anyone allowed to publish to lazarus.control could have written one, so an
 * event only makes the guard read the list again. The list comes from Lazarus itself, and the guard reads it one
 * request at a time, so the answer read last is the newest and replaces whatever was known.
 */
export class PauseRegistry {
  private known = -1
  private loaded = false
  private readonly pauses = new Map<string, GuardPause>()

  constructor(
    readonly vhost: string,
    readonly queue: string,
  ) {}

  /** Registry version of the list applied last; -1 before any. */
  get version(): number {
    return this.known
  }

  /** True while the pauses come from a list Lazarus answered; false before the first one and after forget(). */
  get isLoaded(): boolean {
    return this.loaded
  }

  /** Applies a full list: it replaces everything known before. */
  replace(list: PauseList): void {
    this.pauses.clear()
    for (const pause of list.pauses) if (this.concerns(pause) && pause.status !== 'resumed') this.pauses.set(pause.id, pause)
    this.known = list.version
    this.loaded = true
  }

  /**
   * Drops every pause: the guard may no longer read the list (Lazarus refused it), so what it last read can no longer
   * be kept up to date, and a pause it never hears resumed would hold or stop messages for good.
   */
  forget(): void {
    this.pauses.clear()
    this.loaded = false
  }

  /** Pauses on this guard's queue, oldest first. */
  list(): GuardPause[] {
    return [...this.pauses.values()].sort((a, b) => a.version - b.version)
  }

  /** The whole-queue pause on this queue, if any. */
  wholeQueuePause(): GuardPause | null {
    for (const pause of this.pauses.values()) if (pause.entityKey === null) return pause
    return null
  }

  /**
   * The pause a message falls under: a whole-queue pause, or an entity pause whose rule extracts the paused
   * key from it. Each distinct rule is applied once per message.
   */
  match(message: KeyedMessage): { pause: GuardPause; entityKey: string | null } | null {
    const whole = this.wholeQueuePause()
    if (whole) return { pause: whole, entityKey: null }
    const keys = new Map<string, string | null>()
    for (const pause of this.pauses.values()) {
      const ruleId = ruleKey(pause.entityKeyRule)
      if (!keys.has(ruleId)) keys.set(ruleId, extractEntityKey(pause.entityKeyRule, message))
      const key = keys.get(ruleId)
      if (key !== null && key === pause.entityKey) return { pause, entityKey: key }
    }
    return null
  }

  private concerns(pause: GuardPause): boolean {
    return pause.vhost === this.vhost && pause.queue === this.queue
  }
}

function ruleKey(rule: EntityKeyRule | null): string {
  if (!rule) return 'default'
  return rule.kind === 'jsonPointer' ? `p:${rule.pointer}` : `${rule.kind}:${rule.name}`
}
