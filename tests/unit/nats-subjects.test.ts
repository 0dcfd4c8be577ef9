import { describe, expect, it } from 'vitest'
import { subjectFilterRegex, subjectMatches, subjectsOverlap } from '@/lib/shared/nats-subjects'

describe('NATS subject wildcards', () => {
  it('matches literal subjects against filters with * and >', () => {
    expect(subjectMatches('orders.created', 'orders.created')).toBe(true)
    expect(subjectMatches('orders.*', 'orders.created')).toBe(true)
    expect(subjectMatches('orders.*', 'orders.created.eu')).toBe(false)
    expect(subjectMatches('orders.>', 'orders.created.eu')).toBe(true)
    expect(subjectMatches('orders.>', 'orders')).toBe(false)
    expect(subjectMatches('>', 'anything.at.all')).toBe(true)
    expect(subjectMatches('*.created', 'orders.created')).toBe(true)
    expect(subjectMatches('orders.created', 'orders.updated')).toBe(false)
    expect(subjectMatches('orders', 'orders.created')).toBe(false)
  })

  it('tells whether two filters can match one subject', () => {
    expect(subjectsOverlap('$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>', '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.*')).toBe(true)
    expect(subjectsOverlap('orders.*', 'orders.created')).toBe(true)
    expect(subjectsOverlap('orders.*', '*.created')).toBe(true)
    expect(subjectsOverlap('orders.*', 'orders.created.eu')).toBe(false)
    expect(subjectsOverlap('orders.>', 'billing.>')).toBe(false)
    expect(subjectsOverlap('orders.>', 'orders')).toBe(false)
    expect(subjectsOverlap('a.b', 'a.b')).toBe(true)
  })
})

describe('a subject filter in SQL', () => {
  it('is an equality without wildcards and an anchored regular expression with them', () => {
    expect(subjectFilterRegex('orders.created')).toBeNull()
    expect(subjectFilterRegex('orders.*')).toBe('^orders\\.[^.]+$')
    expect(subjectFilterRegex('orders.>')).toBe('^orders\\..+$')
    expect(subjectFilterRegex('*.eu-1.>')).toBe('^[^.]+\\.eu\\-1\\..+$')
    for (const [filter, subject, matches] of [['orders.*', 'orders.created', true], ['orders.*', 'orders.created.eu', false], ['orders.>', 'orders.a.b', true], ['*.eu-1.>', 'pay.eu-1.x', true], ['*.eu-1.>', 'pay.eu11.x', false]] as const) {
      expect(new RegExp(subjectFilterRegex(filter)!).test(subject), `${filter} ~ ${subject}`).toBe(matches)
      expect(subjectMatches(filter, subject)).toBe(matches)
    }
  })
})
