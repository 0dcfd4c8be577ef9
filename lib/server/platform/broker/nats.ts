import 'server-only'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { connect, credsAuthenticator, nkeyAuthenticator, type Authenticator, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node'
import type { Config } from '@/lib/server/platform/config'

/** The part of the configuration a NATS connection reads (docs/jetstream.md#connecting). */
export type NatsSettings = Pick<Config, 'LAZARUS_NATS_URL' | 'LAZARUS_NATS_USER' | 'LAZARUS_NATS_PASSWORD' | 'LAZARUS_NATS_TOKEN' | 'LAZARUS_NATS_CREDS_FILE' | 'LAZARUS_NATS_NKEY_SEED'>

/**
 * Connection options from the settings. Credentials in the URL (`nats://user:pass@host`) are the client's own; the
 * variables add a user and password, a token, a creds file or an NKey seed. The client reconnects without end: the
 * capture loop, not the connection, decides when to give up on a request.
 */
export function natsConnectionOptions(settings: NatsSettings, name: string): NodeConnectionOptions {
  if (!settings.LAZARUS_NATS_URL) throw new Error('LAZARUS_NATS_URL is not set')
  const authenticators: Authenticator[] = []
  if (settings.LAZARUS_NATS_CREDS_FILE) authenticators.push(credsAuthenticator(readFileSync(settings.LAZARUS_NATS_CREDS_FILE)))
  if (settings.LAZARUS_NATS_NKEY_SEED) authenticators.push(nkeyAuthenticator(new TextEncoder().encode(settings.LAZARUS_NATS_NKEY_SEED)))
  return {
    servers: settings.LAZARUS_NATS_URL,
    name: `${name} ${hostname()}:${process.pid}`,
    ...(settings.LAZARUS_NATS_USER && { user: settings.LAZARUS_NATS_USER }),
    ...(settings.LAZARUS_NATS_PASSWORD && { pass: settings.LAZARUS_NATS_PASSWORD }),
    ...(settings.LAZARUS_NATS_TOKEN && { token: settings.LAZARUS_NATS_TOKEN }),
    ...(authenticators.length > 0 && { authenticator: authenticators }),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1_000,
  }
}

export function connectNats(settings: NatsSettings, name: string): Promise<NatsConnection> {
  return connect(natsConnectionOptions(settings, name))
}
