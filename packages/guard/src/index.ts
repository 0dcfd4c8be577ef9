/**
 * Lazarus' pause guard for Node amqplib consumers (see the README, "Pausing entities: the guard").
 * No Next.js and no Lazarus server code: applications install the package `@lazarus/guard` and pass their own amqplib
 * connection.
 */
export { createGuard, type Guard, type GuardConnection, type GuardOptions, type GuardedConsumer, type GuardVersionOptions, type HoldEvent, type MessageHandler, type SupersededEvent } from './guard'
export { extractEntityVersion, formatVersion, versionOf, VersionWindow, type VersionValue, type VersionWindowOptions } from './entity-version'
export { extractEntityKey, parseJsonPointer, MAX_ENTITY_KEY_LENGTH, type KeyedMessage } from './entity-key'
export { PauseRegistry } from './registry'
export { GUARD_VERSION } from './version'
export * from './protocol'
