import { describe, expect, it } from 'vitest'
import { isConnectionError, isRetryableSqlError } from '@/lib/server/platform/db/sql'
import { isManagementNotFound, ManagementApiError } from '@/lib/server/platform/broker/management-api'

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code })

/** Errors are told apart by code or class; text only where the library gives nothing else (said where it is done). */
describe('database errors', () => {
  it.each([
    ['08006', true],
    ['08001', true],
    ['57P01', true],
    ['53300', true],
    ['ECONNREFUSED', true],
    ['ECONNRESET', true],
    ['57014', false],
    ['23505', false],
    ['40001', false],
  ])('code %s is a connection error: %s', (code, expected) => {
    expect(isConnectionError(withCode('whatever the text says', code))).toBe(expected)
  })

  it("reads node-pg's codeless connection errors by their text, and only those", () => {
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(isConnectionError(new Error('Client has encountered a connection error and is not queryable'))).toBe(true)
    // A coded error is judged by its code, whatever its text.
    expect(isConnectionError(withCode('relation "connection timeout" does not exist', '42P01'))).toBe(false)
    expect(isConnectionError(new Error('duplicate key'))).toBe(false)
    expect(isConnectionError(null)).toBe(false)
  })

  it('retries deadlocks and serialisation failures', () => {
    expect(isRetryableSqlError(withCode('deadlock detected', '40P01'))).toBe(true)
    expect(isRetryableSqlError(withCode('could not serialize access', '40001'))).toBe(true)
    expect(isRetryableSqlError(withCode('deadlock detected', '23505'))).toBe(false)
  })
})

describe('management API errors', () => {
  it('tells a missing object by the answer status, not the message', () => {
    expect(isManagementNotFound(new ManagementApiError('/api/queues/%2F/orders', 404))).toBe(true)
    expect(new ManagementApiError('/api/queues/%2F/orders', 404).message).toBe('management API /api/queues/%2F/orders: HTTP 404')
    expect(isManagementNotFound(new ManagementApiError('/api/queues/%2F/orders', 500))).toBe(false)
    expect(isManagementNotFound(new Error('management API /api/queues/%2F/orders: HTTP 404'))).toBe(false)
    expect(isManagementNotFound(new TypeError('fetch failed'))).toBe(false)
  })
})
