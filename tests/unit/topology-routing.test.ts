import { describe, expect, it } from 'vitest'
import { topicMatches } from '@/lib/shared/topology/topic-match'
import { buildRoutingTable, routePublish, routesAnyKey, topicPatternsOverlap } from '@/lib/server/topology/routing'
import { snapBinding } from '../helpers/topology-snapshot'

const table = (exchanges: [string, string, string | null][], bindings: ReturnType<typeof snapBinding>[], queues: string[]) =>
  buildRoutingTable({ exchanges: exchanges.map(([name, type, alternateExchange]) => ({ name, type, alternateExchange })), bindings, queues })

describe('routing', () => {
  it('matches topic wildcards word by word', () => {
    expect(topicMatches('orders.*', 'orders.created')).toBe(true)
    expect(topicMatches('orders.*', 'orders.created.eu')).toBe(false)
    expect(topicMatches('orders.#', 'orders')).toBe(true)
    expect(topicMatches('orders.#', 'orders.created.eu')).toBe(true)
    expect(topicMatches('#.eu', 'orders.created.eu')).toBe(true)
    expect(topicMatches('*.created.#', 'orders.created')).toBe(true)
    expect(topicMatches('a.*.c', 'a.b.d')).toBe(false)
  })

  it('tells whether two topic patterns share a key', () => {
    expect(topicPatternsOverlap('order.*', 'order.created')).toBe(true)
    expect(topicPatternsOverlap('order.*', 'payment.#')).toBe(false)
    expect(topicPatternsOverlap('#', 'a.b.c')).toBe(true)
    expect(topicPatternsOverlap('*.eu', 'order.#')).toBe(true)
    expect(topicPatternsOverlap('a.*.c', 'a.#.d')).toBe(false)
  })

  it('routes direct by equality and fanout to every binding', () => {
    const t = table([['d', 'direct', null], ['f', 'fanout', null]], [snapBinding('d', 'q1', 'k1'), snapBinding('d', 'q2', 'k2'), snapBinding('f', 'q1', 'ignored'), snapBinding('f', 'q3', '')], ['q1', 'q2', 'q3'])
    expect(routePublish({ table: t, exchange: 'd', routingKey: 'k2' }).queues).toEqual(['q2'])
    expect(routePublish({ table: t, exchange: 'd', routingKey: 'nope' }).queues).toEqual([])
    expect(routePublish({ table: t, exchange: 'f', routingKey: 'any' }).queues).toEqual(['q1', 'q3'])
  })

  it('follows exchange-to-exchange bindings', () => {
    const t = table([['front', 'direct', null], ['back', 'topic', null]], [snapBinding('front', 'back', 'orders.created', 'exchange'), snapBinding('back', 'dlq', 'orders.#')], ['dlq'])
    expect(routePublish({ table: t, exchange: 'front', routingKey: 'orders.created' })).toMatchObject({ queues: ['dlq'], exchanges: ['front', 'back'] })
    expect(routePublish({ table: t, exchange: 'front', routingKey: 'orders.paid' }).queues).toEqual([])
  })

  it('hands an unmatched message to the alternate exchange, and only then', () => {
    const t = table([['dlx', 'direct', 'ae'], ['ae', 'fanout', null]], [snapBinding('dlx', 'specific', 'k'), snapBinding('ae', 'catch-all', '')], ['specific', 'catch-all'])
    expect(routePublish({ table: t, exchange: 'dlx', routingKey: 'k' }).queues).toEqual(['specific'])
    expect(routePublish({ table: t, exchange: 'dlx', routingKey: 'other' }).queues).toEqual(['catch-all'])
    expect(routesAnyKey({ table: t, exchange: 'dlx' })).toBe(true)
  })

  it('names a missing alternate exchange', () => {
    const t = table([['dlx', 'direct', 'gone']], [], [])
    expect(routePublish({ table: t, exchange: 'dlx', routingKey: 'k' })).toMatchObject({ queues: [], missingExchanges: ['gone'] })
  })

  it('routes the default exchange to the queue named by the key', () => {
    const t = table([], [], ['orders.dlq'])
    expect(routePublish({ table: t, exchange: '', routingKey: 'orders.dlq' }).queues).toEqual(['orders.dlq'])
    expect(routePublish({ table: t, exchange: '', routingKey: 'orders.created' }).queues).toEqual([])
  })

  it('says headers exchanges are indeterminate', () => {
    const t = table([['h', 'headers', null]], [snapBinding('h', 'q', '')], ['q'])
    expect(routePublish({ table: t, exchange: 'h', routingKey: 'k' })).toMatchObject({ queues: [], indeterminate: true })
  })

  it('does not loop on exchange-to-exchange cycles', () => {
    const t = table([['a', 'fanout', null], ['b', 'fanout', null]], [snapBinding('a', 'b', '', 'exchange'), snapBinding('b', 'a', '', 'exchange'), snapBinding('b', 'q', '')], ['q'])
    expect(routePublish({ table: t, exchange: 'a', routingKey: 'x' }).queues).toEqual(['q'])
  })
})
