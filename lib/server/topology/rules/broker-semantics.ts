import 'server-only'
import type { AnalysedQueue } from '../analyse-graph'
import { check, finding, messagesQuery, queueList, queueRef, settingEvidence, settingValue, sourceParams, type DiagnosedFinding, type RuleInput, type RuleOutput } from './rule-kit'

/*
 * Findings 6 (docs/topology.md#findings): settings whose broker semantics lose messages
 * (docs/rabbitmq.md#dead-lettering, docs/rabbitmq.md#quorum-queues, docs/rabbitmq.md#size-limits).
 */

/** RabbitMQ's default max_message_size: 16 MiB since 4.0, 128 MiB before (docs/rabbitmq.md#size-limits). */
export const maxMessageSize = (majorVersion: number) => (majorVersion >= 4 ? 16 : 128) * 1024 * 1024

const isTemporary = (q: AnalysedQueue) => q.queue.exclusive || q.queue.autoDelete

export function brokerSemanticsRule({ graph, evidence, thresholds }: RuleInput): RuleOutput {
  const findings: DiagnosedFinding[] = []
  const queues = queueList(graph)
  const quorum = queues.filter((q) => q.queue.type === 'quorum')
  const consumed = queues.filter((q) => q.role === 'work' && q.queue.consumers > 0 && !isTemporary(q))
  const ref = (q: AnalysedQueue) => [queueRef(q.queue.name)]

  // A quorum queue with a delivery limit and no DLX gets the sharper quorum-delivery-limit-no-dlx instead.
  const limitedQuorum = (q: AnalysedQueue) => q.queue.type === 'quorum' && typeof settingValue(q, 'delivery-limit') === 'number' && (settingValue(q, 'delivery-limit') as number) >= 0
  for (const q of consumed) {
    if (q.dlx !== null || limitedQuorum(q)) continue
    findings.push(
      finding(graph, {
        kind: 'no-dlx',
        severity: 'warning',
        title: `Queue "${q.queue.name}" is consumed but has no dead-letter exchange`,
        why: `Every message its consumers reject, that expires${q.queue.type === 'quorum' ? ', or that passes its delivery limit' : ''} or overflows is dropped by the broker: nothing of it reaches a DLQ.`,
        fix: `Set dead-letter-exchange on "${q.queue.name}" (argument x-dead-letter-exchange, or a policy) to an exchange bound to a dead-letter queue.`,
        evidence: [settingEvidence(q, 'dead-letter-exchange'), { label: 'consumers', value: String(q.queue.consumers) }, { label: 'type', value: q.queue.type }],
        objects: ref(q),
      }),
    )
  }

  for (const q of quorum) {
    const limit = settingValue(q, 'delivery-limit')
    if (q.dlx === null && limitedQuorum(q)) {
      findings.push(
        finding(graph, {
          kind: 'quorum-delivery-limit-no-dlx',
          severity: 'error',
          title: `Quorum queue "${q.queue.name}" drops messages after ${limit} deliveries`,
          why: `A quorum queue drops a message returned more than its delivery limit${q.settings.byKey.get('delivery-limit')?.from === 'default' ? ` (${limit} by default since RabbitMQ 4.0)` : ''} when it has no dead-letter exchange: a poison message, or one a crashing consumer kept returning, vanishes.`,
          fix: `Set dead-letter-exchange on "${q.queue.name}" to an exchange bound to a DLQ (with dead-letter-strategy at-least-once and overflow reject-publish), or delivery-limit -1 if dropping is really meant.`,
          evidence: [settingEvidence(q, 'delivery-limit'), settingEvidence(q, 'dead-letter-exchange')],
          objects: ref(q),
        }),
      )
    }
    const strategy = settingValue(q, 'dead-letter-strategy')
    if (q.dlx !== null && strategy === 'at-most-once' && (q.role === 'work' || q.role === 'delay')) {
      findings.push(
        finding(graph, {
          kind: 'quorum-at-most-once',
          severity: 'info',
          title: `Quorum queue "${q.queue.name}" dead-letters at-most-once`,
          why: 'At-most-once dead letters are republished without confirms and removed at once: if the DLX or the DLQ cannot take one at that moment (a node down, a full DLQ), it is lost.',
          fix: `Set dead-letter-strategy at-least-once and overflow reject-publish on "${q.queue.name}" (by policy or arguments).`,
          evidence: [settingEvidence(q, 'dead-letter-strategy'), settingEvidence(q, 'overflow'), settingEvidence(q, 'dead-letter-exchange')],
          objects: ref(q),
        }),
      )
    }
  }

  const atLeastOnce = queues.filter((q) => settingValue(q, 'dead-letter-strategy') === 'at-least-once')
  for (const q of atLeastOnce) {
    const overflow = settingValue(q, 'overflow')
    if (q.queue.type === 'quorum' && overflow === 'reject-publish' && q.dlx !== null) continue
    findings.push(
      finding(graph, {
        kind: 'at-least-once-fallback',
        severity: 'error',
        title: `Queue "${q.queue.name}" asks for at-least-once dead-lettering but runs at-most-once`,
        why:
          q.queue.type !== 'quorum'
            ? 'Only quorum queues dead-letter at-least-once; this queue ignores the setting and dead-letters at-most-once.'
            : q.dlx === null
              ? 'At-least-once needs a dead-letter exchange; without one nothing is dead-lettered at all.'
              : `At-least-once needs overflow reject-publish; with ${String(overflow)} the queue silently falls back to at-most-once, and switching drops the dead letters still pending.`,
        fix: q.queue.type !== 'quorum' ? `Make "${q.queue.name}" a quorum queue (x-queue-type quorum) if its dead letters must not be lost.` : `Set overflow reject-publish on "${q.queue.name}"${q.dlx === null ? ' and a dead-letter-exchange' : ''}.`,
        evidence: [settingEvidence(q, 'dead-letter-strategy'), settingEvidence(q, 'overflow'), settingEvidence(q, 'dead-letter-exchange'), { label: 'type', value: q.queue.type }],
        objects: ref(q),
      }),
    )
  }

  const expiring = queues.filter((q) => settingValue(q, 'expires') !== null)
  for (const q of expiring) {
    if (q.dlx === null) continue
    findings.push(
      finding(graph, {
        kind: 'expires-with-dlx',
        severity: q.role === 'dlq' || q.role === 'delay' ? 'error' : 'warning',
        title: `Queue "${q.queue.name}" expires as a whole after ${String(settingValue(q, 'expires'))} ms unused, and its DLX gets nothing then`,
        why: 'When a queue expires (no consumer, no get, no redeclare for the expires period) it is deleted with its messages, which are not dead-lettered: the DLX does not help.',
        fix: `Remove expires from "${q.queue.name}" (argument x-expires, or the policy setting it); use message-ttl if messages should time out into the DLX.`,
        evidence: [settingEvidence(q, 'expires'), settingEvidence(q, 'dead-letter-exchange'), { label: 'role', value: q.role }],
        objects: ref(q),
      }),
    )
  }

  const limitedQueues = queues.filter((q) => settingValue(q, 'max-length') !== null || settingValue(q, 'max-length-bytes') !== null)
  for (const q of limitedQueues) {
    if (q.dlx !== null || settingValue(q, 'overflow') !== 'drop-head') continue
    findings.push(
      finding(graph, {
        kind: 'drop-head-no-dlx',
        severity: q.role === 'dlq' ? 'error' : 'warning',
        title: `Queue "${q.queue.name}" drops its oldest messages when full`,
        why: 'With a length limit, overflow drop-head (the default) and no dead-letter exchange, every message over the limit pushes the oldest one out of the queue, silently.',
        fix: `Set overflow reject-publish on "${q.queue.name}" so a full queue refuses new messages (publishers with confirms see it), or give it a dead-letter-exchange.`,
        evidence: [settingEvidence(q, 'max-length'), settingEvidence(q, 'max-length-bytes'), settingEvidence(q, 'overflow'), settingEvidence(q, 'dead-letter-exchange')],
        objects: ref(q),
      }),
    )
  }

  const limit = maxMessageSize(graph.majorVersion)
  const near = Math.floor(limit * thresholds.nearSizeRatio)
  for (const source of evidence.sources) {
    if (source.largestBody < near) continue
    findings.push(
      finding(graph, {
        kind: 'message-near-size-limit',
        severity: 'warning',
        title: `Letters drained from "${source.queue}" are near the broker's maximum message size`,
        why: `RabbitMQ ${graph.brokerVersion} refuses messages over ${limit} bytes by default (max_message_size); a replay of a letter this large, with the headers a replay adds, may be refused and close the channel.`,
        fix: 'Replay these letters to a broker with a larger max_message_size, or store large payloads elsewhere and send a reference.',
        evidence: [
          { label: 'largest body', value: `${source.largestBody} bytes` },
          { label: `letters of at least ${evidence.window.nearSizeBytes} bytes`, value: String(source.nearSizeLetters) },
          { label: 'max message size', value: `${limit} bytes (the default of RabbitMQ ${graph.majorVersion}.x)` },
        ],
        objects: [queueRef(source.queue)],
        messagesQuery: messagesQuery(sourceParams(source.sourceId)),
      }),
    )
  }

  return {
    findings,
    checks: [
      check('no-dlx', consumed.length, `${consumed.length} consumed work queues: a dead-letter-exchange`, findings),
      check('quorum-delivery-limit-no-dlx', quorum.length, `${quorum.length} quorum queues: a dead-letter-exchange wherever a delivery limit applies`, findings),
      check('quorum-at-most-once', quorum.length, `${quorum.length} quorum queues: at-least-once dead-lettering on work and delay queues`, findings),
      check('at-least-once-fallback', atLeastOnce.length, `${atLeastOnce.length} queues asking for at-least-once: a quorum queue with overflow reject-publish and a DLX`, findings),
      check('expires-with-dlx', expiring.length, `${expiring.length} queues with expires: none with a dead-letter-exchange`, findings),
      check('drop-head-no-dlx', limitedQueues.length, `${limitedQueues.length} queues with a length limit: none drop-head without a dead-letter-exchange`, findings),
      check('message-near-size-limit', evidence.sources.length, `${evidence.sources.length} sources' stored letters: bodies under ${near} bytes`, findings),
    ],
  }
}
