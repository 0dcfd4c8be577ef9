import 'server-only'
import { check, messagesQuery, type DiagnosedFinding, type RuleOutput } from '../../rules/rule-kit'
import { consumerAdvisorySubjects, MAX_DELIVERIES_ADVISORY, TERMINATED_ADVISORY } from '@/lib/server/platform/broker/nats-advisory-subjects'
import { consumerRef, judgedConsumers, jetStreamFinding, maxDeliverText, sourceText, streamRef, type JetStreamRuleInput } from './jetstream-kit'

/*
 * Whether a consumer's failures can be captured at all (docs/jetstream.md#the-doctors-jetstream-findings): its failure
 * advisories must be kept by a stream, and its terminated messages must still be in their stream when read.
 */

const kept = (streams: string[]) => (streams.length > 0 ? `kept by ${streams.join(', ')}` : 'kept by no stream')

/**
 * advisories-not-captured: a consumer with max_deliver whose failure advisories no stream's subjects cover (the NATS
 * wildcard rules, nats-subjects.ts). Advisories are core NATS messages: whoever is not subscribed when one is published
 * never sees it. Lazarus' own advisory stream counts only where its subjects cover the consumer's (it narrows them to
 * its sources' streams when a team keeps others, capture-plan.ts).
 */
export function advisoriesCapturedRule({ consumers, ownAdvisoryStream }: JetStreamRuleInput): RuleOutput {
  const judged = judgedConsumers(consumers).filter((c) => c.consumer.maxDeliver > 0)
  const findings: DiagnosedFinding[] = []
  for (const c of judged) {
    const { maxDeliveries, terminated } = c.keepers
    if (maxDeliveries.length > 0 && terminated.length > 0) continue
    const subjects = consumerAdvisorySubjects(c.stream.stream.name, c.consumer.name)
    const missing = [maxDeliveries.length === 0 && 'max-deliveries', terminated.length === 0 && 'terminated'].filter((k): k is string => k !== false)
    const stream = c.stream.stream.name
    findings.push(
      jetStreamFinding({
        kind: 'advisories-not-captured',
        // A lost max-deliveries advisory is a lost failure; terminated ones are lost only if the handler terminates.
        severity: maxDeliveries.length === 0 ? 'error' : 'warning',
        title: `No stream keeps the ${missing.join(' and ')} advisories of consumer "${c.name}"`,
        why: `When the consumer gives up on a message (max_deliver ${c.consumer.maxDeliver} reached${terminated.length === 0 ? ', or the handler terminates it' : ''}) the server publishes an advisory and nothing else. Advisories are core NATS messages: with no stream keeping them, a failure is seen only by whoever is subscribed at that moment, and lost for everyone else, Lazarus included whenever it is not running.${c.sourceId ? ' A Lazarus source covers this consumer, but its capture does not keep these advisories yet: the source page says why.' : ''}`,
        fix: c.sourceId
          ? `Check the source's capture on the sources page (the capture keeps its streams' advisories in "${ownAdvisoryStream}"), or keep them in a stream of your own on ${MAX_DELIVERIES_ADVISORY}.${stream}.* and ${TERMINATED_ADVISORY}.${stream}.*.`
          : `Add a JetStream source for stream "${stream}" (Lazarus then keeps its advisories in "${ownAdvisoryStream}" and captures each failure), or keep them in a stream of your own on ${MAX_DELIVERIES_ADVISORY}.${stream}.* and ${TERMINATED_ADVISORY}.${stream}.*.`,
        evidence: [
          { label: 'max_deliver', value: maxDeliverText(c.consumer) },
          { label: 'max-deliveries advisories', value: `${subjects.maxDeliveries}: ${kept(maxDeliveries)}` },
          { label: 'terminated advisories', value: `${subjects.terminated}: ${kept(terminated)}` },
          { label: 'Lazarus source', value: sourceText(c.sourceId) },
        ],
        objects: [consumerRef(c.name)],
      }),
    )
  }
  return {
    findings,
    checks: [check('advisories-not-captured', judged.length, `${judged.length} consumers with max_deliver: a stream keeps their max-deliveries and terminated advisories`, findings)],
  }
}

/**
 * terminated-message-gone: in a work-queue or interest stream the server removes a terminated (+TERM) message at once,
 * so the capture finds it gone and stores only its advisory (flagged message-gone). Raised from what Lazarus stored, for
 * a consumer that is still there on a stream that still removes terminated messages.
 */
export function terminatedMessageGoneRule({ consumers, evidence }: JetStreamRuleInput): RuleOutput {
  const judged = judgedConsumers(consumers).filter((c) => c.stream.stream.retention !== 'limits')
  const byName = new Map(judged.map((c) => [`${c.stream.stream.name}\u0000${c.consumer.name}`, c]))
  const findings: DiagnosedFinding[] = []
  for (const gone of evidence.goneTerminations) {
    const c = byName.get(`${gone.stream}\u0000${gone.consumer}`)
    if (!c) continue
    const retention = c.stream.stream.retention === 'workqueue' ? 'work-queue' : 'interest'
    findings.push(
      jetStreamFinding({
        kind: 'terminated-message-gone',
        severity: 'warning',
        title: `Consumer "${c.name}" terminates messages its ${retention} stream removes at once: ${gone.count} stored without content`,
        why: `A ${retention} stream removes a message as soon as it is terminated (+TERM), before anyone reads the terminated advisory: Lazarus stored ${gone.count} of this consumer's terminated failures in the last ${evidence.window.days} days as records of their advisory, without subject, headers or data (flagged message-gone). They cannot be read, searched by content or replayed.`,
        fix: `Let such messages reach max_deliver instead of terminating them (nak them, with a backoff): a max-delivered message stays in the stream until Lazarus has read it. Or, before terminating, publish the message to a subject a limits stream keeps; or give stream "${c.stream.stream.name}" limits retention with its own max_age.`,
        evidence: [
          { label: 'retention', value: c.stream.stream.retention },
          { label: `terminated without content (${evidence.window.days} days)`, value: String(gone.count) },
          { label: 'newest', value: gone.newestAt },
          { label: 'Lazarus source', value: sourceText(gone.sourceId) },
        ],
        objects: [consumerRef(c.name), streamRef(c.stream.stream.name)],
        // A terminated failure with no message has no error metadata: its failure kind is `exhausted` (build-jetstream-row.ts).
        messagesQuery: messagesQuery([['source', gone.sourceId], ['p.consumer', gone.consumer], ['failureKind', 'exhausted']]),
      }),
    )
  }
  return {
    findings,
    checks: [check('terminated-message-gone', judged.length, `${judged.length} consumers of work-queue and interest streams: no terminated failure stored without its message (${evidence.window.days} days)`, findings)],
  }
}
