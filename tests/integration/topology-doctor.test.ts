import { describe, expect, it } from 'vitest'
import { waitForQueueStats } from '../helpers/management'
import { BOUNDED, declareWorkWithDlq, findingsOf, useTrapBeds } from '../helpers/topology-trap'

// Each trap of issue 17's list built on the real broker, in a fresh vhost, then read and diagnosed by the doctor.
describe('topology doctor: routing, loops and queue settings', () => {
  const bed = useTrapBeds()

  it('finds a dead-letter exchange that does not exist', async () => {
    const { channel, diagnose } = await bed('dlx_missing')
    await channel.assertExchange('app', 'direct')
    await channel.assertQueue('work', { deadLetterExchange: 'gone' })
    await channel.bindQueue('work', 'app', 'work.created')
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['dlx-missing', ['work', 'gone']]])
    expect(diagnosis.findings[0]).toMatchObject({ severity: 'error', key: expect.stringMatching(/^dlx-missing\|__test_dlx_missing_[0-9a-f]+\|queue:work\|exchange:gone$/) })
    expect(diagnosis.findings[0].evidence).toContainEqual({ label: 'dead-letter-exchange', value: 'gone (argument)' })
    expect(diagnosis.nodes.find((n) => n.id === 'x:gone')).toMatchObject({ type: 'exchange', exchangeType: 'missing', severity: 'error' })
  })

  it('finds a direct DLX with no binding for the dead-letter key, and clears it with an exchange-to-exchange binding', async () => {
    const { channel, diagnose } = await bed('dlx_direct')
    await declareWorkWithDlq(channel, { app: 'orders', work: 'orders.work', key: 'order.created', dlx: 'orders.dlx', dlxType: 'direct', dlq: 'orders.dlq', dlqKey: 'order.paid' })
    const trapped = await diagnose()
    expect(findingsOf(trapped)).toEqual([['dlx-unroutable', ['orders.work', 'orders.dlx']]])
    expect(trapped.findings[0].title).toBe('DLX "orders.dlx" of queue "orders.work" has no binding for "order.created"')
    expect(trapped.findings[0].fix).toContain('routing key "order.created"')

    await channel.assertExchange('orders.dlx.all', 'fanout')
    await channel.bindExchange('orders.dlx.all', 'orders.dlx', 'order.created')
    await channel.bindQueue('orders.dlq', 'orders.dlx.all', '')
    expect(findingsOf(await diagnose())).toEqual([])
  })

  it('finds a topic DLX whose bindings match none of the keys, and clears it with an alternate exchange', async () => {
    const { channel, diagnose } = await bed('dlx_topic')
    await declareWorkWithDlq(channel, { app: 'events', appType: 'topic', work: 'events.work', key: 'order.*', dlx: 'events.dlx', dlxType: 'topic', dlq: 'events.dlq', dlqKey: 'payment.#' })
    expect(findingsOf(await diagnose())).toEqual([['dlx-unroutable', ['events.work', 'events.dlx']]])

    // An exchange's arguments cannot change, so the DLX is declared again with an alternate exchange.
    await channel.deleteExchange('events.dlx')
    await channel.assertExchange('events.dlx.ae', 'fanout')
    await channel.assertExchange('events.dlx', 'topic', { alternateExchange: 'events.dlx.ae' })
    await channel.bindQueue('events.dlq', 'events.dlx', 'payment.#')
    await channel.bindQueue('events.dlq', 'events.dlx.ae', '')
    const fixed = await diagnose()
    expect(findingsOf(fixed)).toEqual([])
    expect(fixed.edges).toContainEqual({ id: 'a:x:events.dlx', from: 'x:events.dlx', to: 'x:events.dlx.ae', kind: 'alternate', routingKey: null })
  })

  it('finds a topic DLX that binds other keys than the dead letters carry', async () => {
    const { channel, diagnose } = await bed('dlx_topic_literal')
    await channel.assertExchange('events', 'topic')
    await channel.assertExchange('events.dlx', 'topic')
    await channel.assertQueue('events.work', { deadLetterExchange: 'events.dlx', deadLetterRoutingKey: 'dead.events' })
    await channel.bindQueue('events.work', 'events', 'order.created')
    await channel.assertQueue('events.dlq', BOUNDED)
    await channel.bindQueue('events.dlq', 'events.dlx', 'dead.*.x')
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['dlx-unroutable', ['events.work', 'events.dlx']]])
    expect(diagnosis.findings[0].evidence).toContainEqual({ label: 'dead-letter-routing-key', value: 'dead.events (argument)' })
  })

  it('finds a retry loop without exit, shows the cycle, and finds nothing once a parking exchange leads to a DLQ', async () => {
    const { channel, diagnose } = await bed('retry_loop')
    await channel.assertExchange('jobs', 'direct')
    await channel.assertExchange('jobs.retry', 'direct')
    await channel.assertQueue('jobs.work', { deadLetterExchange: 'jobs.retry' })
    await channel.bindQueue('jobs.work', 'jobs', 'job')
    await channel.assertQueue('jobs.delay', { messageTtl: 5000, deadLetterExchange: 'jobs' })
    await channel.bindQueue('jobs.delay', 'jobs.retry', 'job')
    const looping = await diagnose()
    expect(findingsOf(looping)).toEqual([['retry-loop-no-exit', ['jobs.delay', 'jobs.work', 'jobs', 'jobs.retry']]])
    expect(looping.findings[0].cycle).toEqual(['q:jobs.delay', 'x:jobs', 'q:jobs.work', 'x:jobs.retry'])
    expect(Object.fromEntries(looping.nodes.flatMap((n) => (n.type === 'queue' ? [[n.name, n.role]] : [])))).toEqual({ 'jobs.work': 'work', 'jobs.delay': 'delay' })

    // Another application's parking exchange is no way out of this loop.
    await channel.assertExchange('billing.parking', 'fanout')
    await channel.assertQueue('billing.dlq', BOUNDED)
    await channel.bindQueue('billing.dlq', 'billing.parking', '')
    expect(findingsOf(await diagnose()).map(([kind]) => kind)).toEqual(['retry-loop-no-exit'])

    await channel.assertExchange('jobs.parking', 'fanout')
    await channel.assertQueue('jobs.dlq', BOUNDED)
    await channel.bindQueue('jobs.dlq', 'jobs.parking', '')
    const withExit = await diagnose()
    expect(findingsOf(withExit)).toEqual([])
    expect(withExit.checks.find((c) => c.kind === 'retry-loop-no-exit')).toMatchObject({ checked: 4, raised: 0, description: expect.stringContaining('1 cycles') })
    // The exit can also be named: an exchange that does not exist is no exit.
    expect(findingsOf(await diagnose({ exitExchanges: ['jobs.nowhere'] })).map(([kind]) => kind)).toEqual(['retry-loop-no-exit'])
  })

  it('finds a delay queue without a queue-level TTL', async () => {
    const { channel, diagnose, vhost } = await bed('delay_ttl')
    await channel.assertExchange('jobs', 'direct')
    await channel.assertExchange('jobs.retry', 'direct')
    await channel.assertExchange('jobs.parking', 'fanout')
    await channel.assertQueue('jobs.work', { deadLetterExchange: 'jobs.retry' })
    await channel.bindQueue('jobs.work', 'jobs', 'job')
    await channel.assertQueue('jobs.delay', { deadLetterExchange: 'jobs' })
    await channel.bindQueue('jobs.delay', 'jobs.retry', 'job')
    await channel.assertQueue('jobs.dlq', BOUNDED)
    await channel.bindQueue('jobs.dlq', 'jobs.parking', '')
    // Without a TTL on either queue, the consumer is what tells the work queue from the delay queue.
    await channel.consume('jobs.work', () => {})
    await waitForQueueStats('jobs.work', (q) => (q.consumers ?? 0) > 0, 'the consumer in the statistics', vhost.name)
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['delay-no-queue-ttl', ['jobs.delay']]])
    expect(diagnosis.findings[0].fix).toContain('x-message-ttl')
  })

  it('finds a dead-letter cycle made only of expiries', async () => {
    const { channel, diagnose } = await bed('expiry_cycle')
    await channel.assertExchange('to-b', 'fanout')
    await channel.assertExchange('to-a', 'fanout')
    await channel.assertQueue('a', { messageTtl: 1000, deadLetterExchange: 'to-b' })
    await channel.assertQueue('b', { messageTtl: 1000, deadLetterExchange: 'to-a' })
    await channel.bindQueue('b', 'to-b', '')
    await channel.bindQueue('a', 'to-a', '')
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['dead-letter-cycle-no-reject', ['a', 'b', 'to-a', 'to-b']]])
    expect(diagnosis.findings[0].cycle).toEqual(['q:a', 'x:to-b', 'q:b', 'x:to-a'])
  })

  it('finds an unbounded DLQ, with its depth and type', async () => {
    const { channel, diagnose } = await bed('dlq_unbounded')
    await declareWorkWithDlq(channel, { app: 'app', work: 'app.work', key: 'k', dlx: 'app.dlx', dlq: 'app.dlq' }, { dlqArguments: {} })
    channel.sendToQueue('app.dlq', Buffer.from('x'))
    channel.sendToQueue('app.dlq', Buffer.from('y'))
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['dlq-unbounded', ['app.dlq']]])
    expect(diagnosis.findings[0].evidence).toEqual(expect.arrayContaining([{ label: 'type', value: 'classic' }, { label: 'max-length', value: 'unset' }]))
  })

  it('finds expires on a queue with a DLX', async () => {
    const { channel, diagnose } = await bed('expires_dlx')
    await declareWorkWithDlq(channel, { app: 'app', work: 'app.work', key: 'k', dlx: 'app.dlx', dlq: 'app.dlq' }, { workArguments: { 'x-expires': 3_600_000 } })
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['expires-with-dlx', ['app.work']]])
    expect(diagnosis.findings[0].evidence).toContainEqual({ label: 'expires', value: '3600000 (argument)' })
  })

  it('finds drop-head overflow without a DLX', async () => {
    const { channel, diagnose } = await bed('drop_head')
    await channel.assertExchange('app', 'direct')
    await channel.assertQueue('app.parked', { maxLength: 10 })
    await channel.bindQueue('app.parked', 'app', 'k')
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['drop-head-no-dlx', ['app.parked']]])
    expect(diagnosis.findings[0].evidence).toContainEqual({ label: 'overflow', value: 'drop-head (default)' })
  })

  it('finds at-least-once dead-lettering without reject-publish', async () => {
    const { channel, diagnose } = await bed('at_least_once')
    await declareWorkWithDlq(channel, { app: 'app', work: 'app.work', key: 'k', dlx: 'app.dlx', dlq: 'app.dlq' }, { workArguments: { 'x-queue-type': 'quorum', 'x-dead-letter-strategy': 'at-least-once' } })
    const diagnosis = await diagnose()
    expect(findingsOf(diagnosis)).toEqual([['at-least-once-fallback', ['app.work']]])
    expect(diagnosis.findings[0].fix).toContain('overflow reject-publish')
  })
})
