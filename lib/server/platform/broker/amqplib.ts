import 'server-only'
import { createRequire } from 'node:module'
import path from 'node:path'
import type * as Amqplib from 'amqplib'
import { installTypedCodec, isTypedCodecInstalled, type AmqplibCodec } from './typed-fields'

/**
 * The only way the app loads amqplib: it installs the lossless header codec (typed-fields.ts) first.
 *
 * amqplib is CommonJS and a Next serverExternalPackage, so at runtime it is Node's own module from
 * node_modules, and amqplib's lib/defs.js copies codec.decodeFields/encodeTable when it first loads.
 * The codec must therefore be patched in Node's module cache before anything requires amqplib.
 */

// amqplib's "exports" map hides lib/*, so the codec is required by file name. Turbopack rejects a
// require of a computed path through createRequire(import.meta.url), which it bundles, so this
// require is taken from Node directly; Turbopack still maps import.meta.url to the file's runtime
// location, standalone output included.
const nodeRequire = process.getBuiltinModule('node:module').createRequire(import.meta.url)
const amqplibDir = path.dirname(nodeRequire.resolve('amqplib'))
const codecFile = path.join(amqplibDir, 'lib', 'codec.js')
const defsFile = path.join(amqplibDir, 'lib', 'defs.js')

const codec = nodeRequire(codecFile) as AmqplibCodec
if (!isTypedCodecInstalled(codec) && nodeRequire.cache[defsFile]) {
  throw new Error(
    'amqplib was loaded before its header codec could be patched, so typed headers would be lost. ' +
      "Import amqplib only through '@/lib/server/platform/broker/amqplib'.",
  )
}
installTypedCodec(codec)

// Visible to the bundler on purpose: Next then treats amqplib as the external it is configured to be
// and copies it into standalone output.
const amqplib = createRequire(import.meta.url)('amqplib') as typeof Amqplib

// Node caches modules by resolved file name, so if defs.js is not cached under the patched codec's
// directory, amqplib came from another copy (a bundler that bakes in build-time paths, say).
if (!nodeRequire.cache[defsFile]) {
  throw new Error(`amqplib was loaded from a different copy than ${amqplibDir}, whose header codec was patched`)
}

export const connect: typeof Amqplib.connect = amqplib.connect
export const credentials: typeof Amqplib.credentials = amqplib.credentials
export const IllegalOperationError: typeof Amqplib.IllegalOperationError = amqplib.IllegalOperationError
export type IllegalOperationError = Amqplib.IllegalOperationError

export type * from 'amqplib'
