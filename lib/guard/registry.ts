import { extractEntityKey, type KeyedMessage } from './entity-key'
import type { ControlEventMessage, EntityKeyRule, GuardPause, PauseList } from './protocol'

export type EventOutcome = 'applied' | 'stale' | 'gap'

/**
 * The pauses one guard honours, kept current from GET /api/pauses and lazarus.control events.
 *
 * Every pause and resume takes the next registry version, and Lazarus commits them in version order, so a
 * list is always "everything up to version N". An event whose version is not above the known one is old
 * news and ignored; one that skips a version means events were missed: it is applied and the caller
 * re-fetches the list (rolled-back transactions also leave gaps, which only costs a fetch).
 */
export class PauseRegistry {
  private known = -1
  private loaded = false
  private readonly pauses = new Map<string, GuardPause>()

  constructor(
    readonly vhost: string,
    readonly queue: string,
  ) {}

  /** Registry version this state reflects; -1 before anything was learnt. */
  get version(): number {
    return this.known
  }

  /** True once a full list was applied (events alone do not tell what is already paused). */
  get isLoaded(): boolean {
    return this.loaded
  }

  /** Applies a full list unless a newer state is already known; returns whether it was applied. */
  replace(list: PauseList): boolean {
    if (list.version < this.known) return false
    this.pauses.clear()
    for (const pause of list.pauses) if (this.concerns(pause) && pause.status !== 'resumed') this.pauses.set(pause.id, pause)
    this.known = list.version
    this.loaded = true
    return true
  }

  apply(event: ControlEventMessage): EventOutcome {
    if (event.version <= this.known) return 'stale'
    const gap = event.version > this.known + 1
    if (this.concerns(event.pause)) {
      if (event.type === 'pause' && event.pause.status !== 'resumed') this.pauses.set(event.pause.id, event.pause)
      else this.pauses.delete(event.pause.id)
    }
    this.known = event.version
    return gap ? 'gap' : 'applied'
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
