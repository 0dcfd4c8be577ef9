import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { vhostDefinitionsSchema } from '@/lib/shared/topology/definitions'
import { buildThreeTier, formatDelay, threeTierSpecSchema, type BuilderObject } from '@/lib/shared/topology/three-tier'

const ORDERS = { name: 'orders', routingKeys: ['order.created', 'order.#'], retryDelaysMs: [30_000, 300_000, 3_600_000] }

/** The argv bash makes of a command line: what rabbitmqadmin would receive. */
function argvOf(command: string): string[] {
  const run = spawnSync('bash', ['-c', `printf '%s\\0' ${command.replace(/^rabbitmqadmin /, '')}`], { encoding: 'utf8' })
  expect(run.status, run.stderr).toBe(0)
  return run.stdout.split('\0').slice(0, -1)
}

const issuesOf = (input: unknown) => threeTierSpecSchema.safeParse(input).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? []

describe('buildThreeTier: the objects', () => {
  const build = buildThreeTier(ORDERS)
  const byId = new Map(build.objects.map((o) => [o.id, o]))
  const queue = (name: string) => byId.get(`queue:${name}`) as Extract<BuilderObject, { kind: 'queue' }>
  const exchange = (name: string) => byId.get(`exchange:${name}`) as Extract<BuilderObject, { kind: 'exchange' }>
  const bindings = build.objects.filter((o) => o.kind === 'binding')

  it('names one delay queue per tier after its TTL', () => {
    expect(build.names).toEqual({
      exchange: 'orders',
      workQueue: 'orders.work',
      retryExchange: 'orders.retry',
      delayQueues: ['orders.retry.30s', 'orders.retry.5m', 'orders.retry.1h'],
      returnExchange: 'orders.return',
      parkingExchange: 'orders.dead',
      dlq: 'orders.dlq',
    })
    expect([200, 1_500, 60_000, 7_200_000].map(formatDelay)).toEqual(['200ms', '1500ms', '1m', '2h'])
  })

  it('makes quorum work and delay queues that dead-letter at least once, with reject-publish', () => {
    expect(queue('orders.work').arguments).toEqual({
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': 'orders.retry',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    })
    for (const [i, ttl] of ORDERS.retryDelaysMs.entries()) {
      const name = build.names.delayQueues[i]!
      expect(queue(name)).toMatchObject({ role: 'delay', durable: true, autoDelete: false })
      expect(queue(name).arguments).toEqual({
        'x-queue-type': 'quorum',
        'x-message-ttl': ttl,
        'x-dead-letter-exchange': 'orders.return',
        'x-dead-letter-routing-key': name,
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      })
    }
  })

  it('bounds the terminal DLQ and refuses at the bound, never drop-head', () => {
    expect(queue('orders.dlq').arguments).toEqual({ 'x-queue-type': 'quorum', 'x-max-length': 1_000_000, 'x-overflow': 'reject-publish' })
    const bytes = buildThreeTier({ ...ORDERS, dlqMaxLength: 5_000, dlqMaxLengthBytes: 1 << 30 })
    expect(bytes.objects.find((o) => o.id === 'queue:orders.dlq')!.arguments).toMatchObject({ 'x-max-length': 5_000, 'x-max-length-bytes': 1 << 30 })
  })

  it('escalates tier by tier through the retry exchange, and the last nack ends in the DLQ', () => {
    const retry = bindings.filter((b) => b.kind === 'binding' && b.source === 'orders.retry').map((b) => b.kind === 'binding' && [b.routingKey, b.destination])
    expect(retry).toEqual([
      ['order.created', 'orders.retry.30s'],
      ['order.#', 'orders.retry.30s'],
      ['orders.retry.30s', 'orders.retry.5m'],
      ['orders.retry.5m', 'orders.retry.1h'],
      ['orders.retry.1h', 'orders.dlq'],
    ])
    const home = bindings.filter((b) => b.kind === 'binding' && b.source === 'orders.return').map((b) => b.kind === 'binding' && [b.routingKey, b.destination])
    expect(home).toEqual(build.names.delayQueues.map((name) => [name, 'orders.work']))
  })

  it('puts the parking exchange on every exchange that receives dead letters, and binds it to the DLQ', () => {
    expect(exchange('orders.dead')).toMatchObject({ exchangeType: 'fanout', arguments: {} })
    expect(exchange('orders.retry')).toMatchObject({ exchangeType: 'topic', arguments: { 'alternate-exchange': 'orders.dead' } })
    expect(exchange('orders.return')).toMatchObject({ exchangeType: 'direct', arguments: { 'alternate-exchange': 'orders.dead' } })
    expect(exchange('orders')).toMatchObject({ exchangeType: 'topic', arguments: {} })
    expect(bindings).toContainEqual(expect.objectContaining({ source: 'orders.dead', destination: 'orders.dlq', routingKey: '' }))
  })

  it('declares everything before anything refers to it', () => {
    const seen = new Set<string>()
    for (const o of build.objects) {
      const refs = o.kind === 'binding' ? [`exchange:${o.source}`, `queue:${o.destination}`] : Object.entries(o.arguments).filter(([k]) => k === 'x-dead-letter-exchange').map(([, v]) => `exchange:${v}`)
      for (const ref of refs) expect(seen.has(ref), `${o.id} refers to ${ref} before it is declared`).toBe(true)
      seen.add(o.id)
    }
    expect(new Set(build.objects.map((o) => o.id)).size).toBe(build.objects.length)
  })
})

describe('buildThreeTier: definitions, commands and the consumer rule', () => {
  it('writes definitions in the shape of GET /api/definitions/{vhost}', () => {
    const { definitions, objects } = buildThreeTier(ORDERS)
    const parsed = vhostDefinitionsSchema.parse(definitions)
    expect(parsed.policies).toEqual([])
    expect(parsed.queues).toHaveLength(5)
    expect(parsed.exchanges).toHaveLength(4)
    expect(parsed.bindings).toHaveLength(objects.filter((o) => o.kind === 'binding').length)
    expect(parsed.queues[0]).toEqual({ name: 'orders.dlq', durable: true, auto_delete: false, arguments: { 'x-queue-type': 'quorum', 'x-max-length': 1_000_000, 'x-overflow': 'reject-publish' } })
    expect(parsed.exchanges).toContainEqual({ name: 'orders.retry', type: 'topic', durable: true, auto_delete: false, internal: false, arguments: { 'alternate-exchange': 'orders.dead' } })
    expect(parsed.bindings).toContainEqual({ source: 'orders.retry', destination: 'orders.retry.5m', destination_type: 'queue', routing_key: 'orders.retry.30s', arguments: {} })
  })

  it('writes one rabbitmqadmin command per object, which the shell splits into the intended arguments', () => {
    const { commands, objects } = buildThreeTier(ORDERS, { vhost: '/' })
    expect(commands).toHaveLength(objects.length)
    expect(commands[0]).toBe('rabbitmqadmin --vhost=/ declare exchange name=orders.dead type=fanout durable=true auto_delete=false internal=false')
    expect(commands).toContain(
      `rabbitmqadmin --vhost=/ declare queue name=orders.work durable=true auto_delete=false arguments='{"x-queue-type":"quorum","x-dead-letter-exchange":"orders.retry","x-dead-letter-strategy":"at-least-once","x-overflow":"reject-publish"}'`,
    )
    expect(commands).toContain('rabbitmqadmin --vhost=/ declare binding source=orders.dead destination=orders.dlq destination_type=queue')
  })

  it('quotes names with spaces, quotes and shell characters so the shell hands them over unchanged', () => {
    const name = `it's "the" $HOME queue`
    const { commands } = buildThreeTier({ name, routingKeys: ['a b', `o'k`], retryDelaysMs: [100] }, { vhost: 'my vhost' })
    const queueCommand = commands.find((c) => c.includes(' declare queue ') && c.includes('.work'))!
    const argv = argvOf(queueCommand)
    expect(argv.slice(0, 4)).toEqual(['--vhost=my vhost', 'declare', 'queue', `name=${name}.work`])
    expect(JSON.parse(argv.at(-1)!.replace(/^arguments=/, ''))).toMatchObject({ 'x-dead-letter-exchange': `${name}.retry` })
    const bindCommand = commands.find((c) => c.includes(' declare binding ') && c.includes(`routing_key='o'\\''k'`))!
    expect(argvOf(bindCommand).slice(3)).toEqual([`source=${name}`, `destination=${name}.work`, 'destination_type=queue', `routing_key=o'k`])
  })

  it('writes the consumer rule: nack to escalate, park after the last tier', () => {
    const { consumerRule } = buildThreeTier(ORDERS)
    expect(consumerRule).toMatchObject({ workQueue: 'orders.work', parkingExchange: 'orders.dead', lastDelayQueue: 'orders.retry.1h', maxDeliveries: 4 })
    expect(consumerRule.text).toContain('requeue=false')
    expect(consumerRule.pseudoCode).toContain('nack(m, requeue=false)')
    expect(consumerRule.pseudoCode).toContain('publish(exchange="orders.dead"')
    expect(consumerRule.pseudoCode).toContain('d.queue == "orders.retry.1h" and d.reason == "expired"')
  })
})

describe('threeTierSpecSchema', () => {
  it('takes 1 to 6 strictly increasing tiers and defaults the DLQ length', () => {
    expect(threeTierSpecSchema.parse({ name: 'a', routingKeys: ['k'], retryDelaysMs: [1] }).dlqMaxLength).toBe(1_000_000)
    expect(threeTierSpecSchema.safeParse({ name: 'a', routingKeys: ['k'], retryDelaysMs: [1, 2, 3, 4, 5, 6] }).success).toBe(true)
    expect(issuesOf({ name: 'a', routingKeys: ['k'], retryDelaysMs: [] })).toEqual(['retryDelaysMs: at least one retry tier'])
    expect(issuesOf({ name: 'a', routingKeys: ['k'], retryDelaysMs: [1, 2, 3, 4, 5, 6, 7] })).toEqual(['retryDelaysMs: at most 6 retry tiers'])
    expect(issuesOf({ name: 'a', routingKeys: ['k'], retryDelaysMs: [300, 200] })).toEqual(['retryDelaysMs: retry delays must be strictly increasing'])
    expect(issuesOf({ name: 'a', routingKeys: ['k'], retryDelaysMs: [300, 300] })).toEqual(['retryDelaysMs: retry delays must be strictly increasing'])
    expect(issuesOf({ name: 'a', routingKeys: ['k'], retryDelaysMs: [0.5] })).toHaveLength(1)
  })

  it('refuses names that would make wildcard retry keys, reserved names, and empty or unknown fields', () => {
    expect(issuesOf({ name: 'orders.#', routingKeys: ['k'], retryDelaysMs: [1] })).toEqual([
      'name: must not contain * or #: the retry keys are made from it and would be wildcards',
    ])
    expect(issuesOf({ name: 'amq.orders', routingKeys: ['k'], retryDelaysMs: [1] })).toEqual(['name: names starting with amq. are reserved by RabbitMQ'])
    expect(issuesOf({ name: '  ', routingKeys: ['k'], retryDelaysMs: [1] })).toEqual(['name: name the work queue'])
    expect(issuesOf({ name: 'x'.repeat(201), routingKeys: ['k'], retryDelaysMs: [1] })).toEqual(['name: must be at most 200 bytes'])
    expect(issuesOf({ name: 'a', routingKeys: [], retryDelaysMs: [1] })).toEqual(['routingKeys: at least one routing key'])
    expect(issuesOf({ name: 'a', routingKeys: ['k', 'k'], retryDelaysMs: [1] })).toEqual(['routingKeys: routing keys must be different'])
    expect(issuesOf({ name: 'a', routingKeys: ['k'], retryDelaysMs: [1], vhost: '/' })).toHaveLength(1)
  })

  it('refuses routing keys that would also catch the retry keys (a retry would enter two tiers)', () => {
    expect(issuesOf({ name: 'orders', routingKeys: ['order.created', '#'], retryDelaysMs: [1_000, 2_000] })).toEqual([
      'routingKeys.1: "#" also matches the retry key "orders.retry.1s": a retried message would enter two tiers at once; use narrower keys',
    ])
    expect(issuesOf({ name: 'orders', routingKeys: ['orders.*.*'], retryDelaysMs: [1_000] })).toHaveLength(1)
    expect(issuesOf({ name: 'orders', routingKeys: ['orders.*', 'order.#'], retryDelaysMs: [1_000] })).toEqual([])
  })
})
