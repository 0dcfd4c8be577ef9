import 'server-only'
import { parseCultureDateTime, revealedDayOrder, type DayOrder } from '../dates'
import { analyseStack, type StackAnalysis } from '../stack-trace'
import { emptyFacts, headerText, propertyText, sourced, stripAssembly, type FrameworkContext, type FrameworkFacts } from './facts'

const MAX_BLOCKS = 50
const AGGREGATE_PREFIX = /^(\d{1,9}) unhandled exceptions?: /
/** `DateTimeOffset.ToString()` always ends with the offset: "03/01/2024 10:15:30 +00:00: ". */
const TIME_PREFIX = /^([^\r\n]{6,48}?[+-]\d{2}:\d{2}): /

export type RebusBlock = { timeText: string | null; text: string }

/** Splits `rbs2-error-details` ("<N> unhandled exceptions: <time>: <ex.ToString()>", blocks separated by blank lines). */
export function splitRebusDetails(details: string): { count: number | null; blocks: RebusBlock[] } {
  const prefix = AGGREGATE_PREFIX.exec(details)
  const rest = prefix ? details.slice(prefix[0].length) : details
  const blocks: RebusBlock[] = []
  for (const chunk of rest.split(/\r?\n[ \t]*\r?\n/)) {
    const time = prefix ? TIME_PREFIX.exec(chunk) : null
    if (time && blocks.length < MAX_BLOCKS) blocks.push({ timeText: time[1], text: chunk.slice(time[0].length) })
    // A blank line inside an exception message: the chunk continues the previous block.
    else if (blocks.length > 0) blocks[blocks.length - 1].text += `\n\n${chunk}`
    else blocks.push({ timeText: null, text: chunk })
  }
  return { count: prefix ? Number(prefix[1]) : null, blocks }
}

/**
 * Block times are written in the process culture. One process writes them all, so a block whose day or
 * month exceeds 12 settles the order for every block; otherwise assume the invariant culture (month first),
 * which is what containers running with globalization-invariant mode use.
 */
function parseBlockTimes(blocks: RebusBlock[]): { times: (Date | null)[]; ambiguous: boolean } {
  const revealed = blocks.map((b) => (b.timeText ? revealedDayOrder(b.timeText) : null)).find((o) => o !== null)
  const order: DayOrder = revealed ?? 'mdy'
  const times = blocks.map((b) => (b.timeText ? parseCultureDateTime(b.timeText, order) : null))
  const ambiguous = !revealed && blocks.some((b) => b.timeText && /^\d{1,2}\/\d{1,2}\//.test(b.timeText.trim()))
  return { times, ambiguous }
}

type Candidate = { analysis: StackAnalysis; time: Date | null; index: number; key: string }

/** docs/framework-headers.md#rebus: group by the most frequent root type and frames; the newest block breaks ties. */
function chooseBlock(candidates: Candidate[]): Candidate | null {
  const frequency = new Map<string, number>()
  for (const c of candidates) frequency.set(c.key, (frequency.get(c.key) ?? 0) + 1)
  // Rebus' own "delivery count exceeded" exception says nothing about why the handler failed.
  const isRebusOwn = (c: Candidate) => (c.analysis.root?.type ?? '').startsWith('Rebus.')
  return (
    [...candidates].sort(
      (a, b) =>
        frequency.get(b.key)! - frequency.get(a.key)! ||
        Number(isRebusOwn(a)) - Number(isRebusOwn(b)) ||
        (b.time?.getTime() ?? -Infinity) - (a.time?.getTime() ?? -Infinity) ||
        a.index - b.index,
    )[0] ?? null
  )
}

/** Rebus error queue (docs/framework-headers.md#rebus). */
export function extractRebus(ctx: FrameworkContext): FrameworkFacts {
  const facts = emptyFacts()
  const details = headerText(ctx, 'rbs2-error-details')
  if (details !== null) {
    const { count, blocks } = splitRebusDetails(details)
    const { times, ambiguous } = parseBlockTimes(blocks)
    const candidates = blocks.map((block, index): Candidate => {
      const analysis = analyseStack(block.text, { hint: 'dotnet' })
      const key = [analysis.root?.type ?? '', ...analysis.frames.slice(0, 3).map((f) => f.fn)].join('\n')
      return { analysis, time: times[index], index, key }
    })
    const chosen = chooseBlock(candidates)
    facts.error = {
      type: chosen?.analysis.root?.type ?? null,
      message: chosen?.analysis.root?.message ?? null,
      stack: details,
      frames: chosen?.analysis.frames ?? [],
      rootMissing: chosen?.analysis.rootMissing ?? false,
      extraParts: [],
      sources: { type: 'rbs2-error-details', message: 'rbs2-error-details', stack: 'rbs2-error-details' },
    }
    if (count !== null) facts.attempts = { value: count, source: 'rbs2-error-details (N unhandled exceptions)' }
    const latest = times.reduce<Date | null>((max, t) => (t && (!max || t > max) ? t : max), null)
    facts.failedAt = sourced(latest, 'rbs2-error-details (newest block time)')
    if (latest && ambiguous) facts.flags.push('failed-at-ambiguous')
  }

  const sourceQueue = headerText(ctx, 'rbs2-source-queue')
  if (sourceQueue !== null) {
    facts.origin.queue = { value: sourceQueue, source: 'rbs2-source-queue' }
    // The input queue is the failing endpoint's address, the closest thing Rebus has to a service name.
    facts.service = { value: sourceQueue, source: 'rbs2-source-queue' }
  }
  const messageType = headerText(ctx, 'rbs2-msg-type')
  facts.messageType = (messageType && stripAssembly(messageType)) || propertyText(ctx, 'type')
  return facts
}
