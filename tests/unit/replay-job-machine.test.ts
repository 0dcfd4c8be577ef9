import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  canHappen,
  REPLAY_JOB_EVENTS,
  REPLAY_JOB_FINAL_STATUSES,
  REPLAY_JOB_STATUSES,
  REPLAY_JOB_TRANSITIONS,
  transitionsOf,
  type ReplayJobStatus,
} from '@/lib/shared/replay-job-machine'

/** The replay job's state machine as a table (lib/shared/replay-job-machine.ts), walked without a database. */

const ROOT = path.resolve(import.meta.dirname, '../..')
/** The table as plain strings: its literal types already prove some of what these tests check at run time. */
const transitions: readonly { event: string; from: ReplayJobStatus | null; to: ReplayJobStatus }[] = REPLAY_JOB_TRANSITIONS
const statuses = new Set<string>(REPLAY_JOB_STATUSES)
const edge = (t: { event: string; from: string | null; to: string }) => `${t.from ?? '[*]'} --> ${t.to} : ${t.event}`

/** Where each status leads, by any event. */
function successors(status: ReplayJobStatus | null): ReplayJobStatus[] {
  return transitions.filter((t) => t.from === status).map((t) => t.to)
}

function reachableFrom(start: ReplayJobStatus | null): Set<ReplayJobStatus> {
  const seen = new Set<ReplayJobStatus>()
  const queue = successors(start)
  while (queue.length > 0) {
    const next = queue.shift()!
    if (seen.has(next)) continue
    seen.add(next)
    queue.push(...successors(next))
  }
  return seen
}

describe('the replay job state machine', () => {
  it('moves only between its statuses, and only create starts from none', () => {
    for (const t of REPLAY_JOB_TRANSITIONS) {
      expect(statuses.has(t.to), edge(t)).toBe(true)
      if (t.from === null) expect(t.event, edge(t)).toBe('create')
      else expect(statuses.has(t.from), edge(t)).toBe(true)
    }
    expect(REPLAY_JOB_TRANSITIONS.filter((t) => t.event === 'create').every((t) => t.from === null)).toBe(true)
  })

  it('gives every event a transition, and each transition once', () => {
    for (const event of REPLAY_JOB_EVENTS) expect(transitionsOf(event).length, event).toBeGreaterThan(0)
    const edges = REPLAY_JOB_TRANSITIONS.map(edge)
    expect(new Set(edges).size).toBe(edges.length)
  })

  it('knows where each event leads from a status, except where the caller names it (create, finish)', () => {
    for (const event of REPLAY_JOB_EVENTS) {
      const from = transitionsOf(event).map((t) => t.from)
      const ambiguous = new Set(from).size !== from.length
      expect(ambiguous, event).toBe(event === 'create' || event === 'finish')
    }
    // Named, each target is again a function of the status.
    for (const to of ['completed', 'cancelled', 'failed'] as const) {
      const from = transitionsOf('finish', to).map((t) => t.from)
      expect(new Set(from).size, to).toBe(from.length)
    }
  })

  it('ends a job for good: no event leaves a final status, and every other status can still end', () => {
    for (const status of REPLAY_JOB_FINAL_STATUSES) {
      expect(transitions.filter((t) => t.from === status).map(edge), status).toEqual([])
    }
    const final = new Set<ReplayJobStatus>(REPLAY_JOB_FINAL_STATUSES)
    for (const status of REPLAY_JOB_STATUSES.filter((s) => !final.has(s))) {
      const ends = [...reachableFrom(status)].filter((s) => final.has(s))
      expect(ends.length, `${status} reaches no final status`).toBeGreaterThan(0)
    }
  })

  it('reaches every status from create', () => {
    expect([...reachableFrom(null)].sort()).toEqual([...REPLAY_JOB_STATUSES].sort())
  })

  it('answers whether an event may happen in a status', () => {
    expect(canHappen('cancel', 'scheduled')).toBe(true)
    expect(canHappen('cancel', 'running')).toBe(false)
    expect(canHappen('request-cancel', 'halted')).toBe(true)
    expect(canHappen('request-cancel', 'completed')).toBe(false)
    expect(canHappen('finish', 'pending', 'cancelled')).toBe(true)
    expect(canHappen('finish', 'pending', 'completed')).toBe(false)
    expect(canHappen('claim', 'halted')).toBe(false)
  })

  it('is drawn in docs/ARCHITECTURE.md, edge for edge', () => {
    const doc = readFileSync(path.join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8')
    const diagram = /```mermaid\nstateDiagram-v2\n([\s\S]*?)```/.exec(doc)
    expect(diagram, 'docs/ARCHITECTURE.md has no mermaid stateDiagram-v2 block').not.toBeNull()
    const drawn = diagram![1]
      .split('\n')
      .map((line) => /^\s*(\[\*\]|\w+) --> (\w+) : ([\w-]+(?:, [\w-]+)*)\s*$/.exec(line))
      .filter((m) => m !== null)
      .flatMap((m) => m[3].split(', ').map((event) => `${m[1]} --> ${m[2]} : ${event}`))
    expect(drawn.sort()).toEqual(REPLAY_JOB_TRANSITIONS.map(edge).sort())
  })

  // docs/ARCHITECTURE.md#job-lifecycle: a status changes only through transitionReplayJob, which checks the table.
  it('has its status written by transitionReplayJob alone', () => {
    const sources: string[] = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name)
        if (entry.isDirectory()) {
          if (entry.name !== 'generated') walk(full)
        } else if (/\.tsx?$/.test(entry.name)) sources.push(full)
      }
    }
    walk(path.join(ROOT, 'lib'))
    const writers = sources.filter((file) => {
      const text = readFileSync(file, 'utf8')
      // An UPDATE of replay_jobs, up to its WHERE, that assigns status (after SET or a comma; not `CASE WHEN status =`).
      return [...text.matchAll(/UPDATE replay_jobs\b([\s\S]*?)\bWHERE\b/g)].some((m) => /(?:\bSET|,)\s*(?:j\.)?status\s*=/.test(m[1]))
    })
    expect(writers.map((f) => path.relative(ROOT, f))).toEqual(['lib/server/replay/transition-replay-job.ts'])
  })
})
