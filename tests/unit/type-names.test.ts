import { describe, expect, it } from 'vitest'
import { lastSegment, withoutAssembly } from '@/lib/server/ingest/normalise/type-names'
import { shortTypeName } from '@/lib/server/ingest/normalise/error-signature'
import { shortTypeForRules } from '@/lib/server/ingest/normalise/failure-kind'

describe('type names', () => {
  // What split(separators).filter(Boolean).pop() gave, which these replace.
  const cases: Array<[string, string, string | null]> = [
    ['org.springframework.amqp.ListenerExecutionFailedException', '.', 'ListenerExecutionFailedException'],
    ['Plain', '.', 'Plain'],
    ['Trailing.Dots..', '.', 'Dots'],
    ['...', '.', null],
    ['', '.', null],
    ['.Leading', '.', 'Leading'],
    ['Acme.Orders.Handler+Inner', '.\\+', 'Inner'],
    ['App\\Message\\OrderFailed', '.\\+', 'OrderFailed'],
    ['com.acme.Outer$Inner', '.\\+$', 'Inner'],
  ]
  it.each(cases)('lastSegment(%j, %j) is %j', (text, separators, expected) => {
    expect(lastSegment(text, separators)).toBe(expected)
    const split = text.split(new RegExp(`[${separators.replace(/[\\$.+]/g, (c) => `\\${c}`)}]`)).filter(Boolean).pop() ?? null
    expect(lastSegment(text, separators)).toBe(split)
  })

  it('drops the assembly of an assembly-qualified name; a generic keeps its commas, as titles always showed it', () => {
    expect(withoutAssembly(' Acme.Orders.OrderFailed, Acme.Orders, Version=1.0.0.0 ')).toBe('Acme.Orders.OrderFailed')
    expect(shortTypeName('Acme.Orders.OrderFailed, Acme.Orders')).toBe('OrderFailed')
    expect(shortTypeName('System.Collections.Generic.List`1[[Acme.Order, Acme]]')).toBe('Order, Acme]]')
    expect(shortTypeName('...')).toBe('...')
    expect(shortTypeForRules('java.net.SocketTimeoutException')).toBe('SocketTimeoutException')
    expect(shortTypeForRules('Acme.Timeouts+DbTimeout, Acme')).toBe('DbTimeout')
  })
})
