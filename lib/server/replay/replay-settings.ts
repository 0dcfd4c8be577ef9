import 'server-only'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import { getConfig, type Config } from '@/lib/server/platform/config'
import type { NatsSettings } from '@/lib/server/platform/broker/nats'

/** Everything replay reads from the configuration, in one place so tests can override a few values. */
export type ReplaySettings = {
  cap: number
  maxBodyBytes: number
  defaultRate: number
  window: number
  leaseMs: number
  confirmTimeoutMs: number
  concurrency: number
  pollMs: number
  /** LAZARUS_REPLAY_HALT_TIMEOUT_MIN in milliseconds: a halted job is cancelled after this long. */
  haltTimeoutMs: number
  amqpUrl: string
  /** The user the executor publishes as: a message's userId property is kept only when it equals this. */
  amqpUser: string
  vhost: string
  /** Lazarus' own exchanges (LAZARUS_CONTROL_EXCHANGE, LAZARUS_HOLD_QUEUE): never replay targets. */
  controlExchange: string
  /** The hold exchange, and the hold queue of the same name. */
  holdQueue: string
  /** LAZARUS_REPLAY_TARGET_PATTERNS: custom-target patterns from the environment, beside the stored allow-list. */
  environmentTargetPatterns: string[]
  /** The NATS connection JetStream replays publish through (docs/jetstream.md#replay); null without LAZARUS_NATS_URL. */
  nats: (NatsSettings & { LAZARUS_NATS_URL: string[] }) | null
}

export function replaySettings(config: Config = getConfig(), overrides: Partial<ReplaySettings> = {}): ReplaySettings {
  const url = new URL(config.AMQP_URL)
  return {
    cap: config.LAZARUS_REPLAY_CAP,
    maxBodyBytes: config.LAZARUS_REPLAY_MAX_BODY_BYTES,
    defaultRate: config.LAZARUS_REPLAY_DEFAULT_RATE,
    window: config.LAZARUS_REPLAY_WINDOW,
    leaseMs: config.LAZARUS_REPLAY_LEASE_MS,
    confirmTimeoutMs: config.LAZARUS_REPLAY_CONFIRM_TIMEOUT_MS,
    concurrency: config.LAZARUS_REPLAY_CONCURRENCY,
    pollMs: config.LAZARUS_REPLAY_POLL_MS,
    haltTimeoutMs: Math.round(config.LAZARUS_REPLAY_HALT_TIMEOUT_MIN * 60_000),
    amqpUrl: config.AMQP_URL,
    // amqplib's default credentials are guest/guest.
    amqpUser: url.username ? decodeURIComponent(url.username) : 'guest',
    vhost: amqpVhost(config.AMQP_URL),
    controlExchange: config.LAZARUS_CONTROL_EXCHANGE,
    holdQueue: config.LAZARUS_HOLD_QUEUE,
    environmentTargetPatterns: config.LAZARUS_REPLAY_TARGET_PATTERNS,
    nats: config.LAZARUS_NATS_URL
      ? {
          LAZARUS_NATS_URL: config.LAZARUS_NATS_URL, LAZARUS_NATS_USER: config.LAZARUS_NATS_USER, LAZARUS_NATS_PASSWORD: config.LAZARUS_NATS_PASSWORD,
          LAZARUS_NATS_TOKEN: config.LAZARUS_NATS_TOKEN, LAZARUS_NATS_CREDS_FILE: config.LAZARUS_NATS_CREDS_FILE, LAZARUS_NATS_NKEY_SEED: config.LAZARUS_NATS_NKEY_SEED,
        }
      : null,
    ...overrides,
  }
}
