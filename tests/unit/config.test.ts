import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '@/lib/server/platform/config'

describe('configuration from the environment', () => {
  it('has working defaults for a fresh machine', () => {
    const config = parseConfig({})
    expect(config.DATABASE_URL).toBeUndefined()
    expect(config).toMatchObject({
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
      RABBITMQ_MANAGEMENT_URL: 'http://guest:guest@127.0.0.1:15672',
      LAZARUS_SOURCES: [],
      PORT: 3000,
      LAZARUS_RUN_WORKERS: true,
    })
  })

  it('parses LAZARUS_SOURCES as a trimmed comma-separated list', () => {
    expect(parseConfig({ LAZARUS_SOURCES: ' orders.dlq, billing.dlq ,,' }).LAZARUS_SOURCES).toEqual(['orders.dlq', 'billing.dlq'])
  })

  it('treats an empty variable as unset', () => {
    expect(parseConfig({ DATABASE_URL: '' }).DATABASE_URL).toBeUndefined()
  })

  const bad: [string, Record<string, string>][] = [
    ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/x' }],
    ['AMQP_URL', { AMQP_URL: 'not a url' }],
    ['RABBITMQ_MANAGEMENT_URL', { RABBITMQ_MANAGEMENT_URL: 'ftp://x' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: 'eighty' }],
    ['LAZARUS_DRAIN_BATCH', { LAZARUS_DRAIN_BATCH: '0' }],
    ['LAZARUS_RUN_WORKERS', { LAZARUS_RUN_WORKERS: 'maybe' }],
  ]
  for (const [variable, env] of bad) {
    it(`stops with a message naming ${variable} for ${JSON.stringify(Object.values(env)[0])}`, () => {
      expect(() => parseConfig(env)).toThrow(ConfigError)
      expect(() => parseConfig(env)).toThrow(new RegExp(`\\b${variable}\\b`))
    })
  }
})
