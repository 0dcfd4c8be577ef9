import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { MAX_HEADER_TABLE_BYTES } from '@/lib/server/replay/publish-message'

/**
 * lib/server/platform/broker/typed-fields.ts and amqplib.ts reach into amqplib's private files (docs/rabbitmq.md#typed-headers,
 * docs/decisions/0006-typed-header-codec.md), so amqplib is pinned to one exact version in package.json. This test
 * fails on an upgrade before anything else does, and names the internal that moved. Whoever upgrades reads the new
 * amqplib's lib/codec.js, lib/defs.js and lib/api_args.js, adapts typed-fields.ts and amqplib.ts, then updates the
 * pin and the expectations here (the behaviour itself is compared with stock amqplib in typed-fields.test.ts).
 */

const ROOT = path.resolve(import.meta.dirname, '../..')
const PINNED = '2.3.1'
const amqplibDir = path.dirname(createRequire(import.meta.url).resolve('amqplib'))
const source = (file: string) => readFileSync(path.join(amqplibDir, 'lib', file), 'utf8')
const json = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>

describe(`amqplib ${PINNED}, whose header codec Lazarus patches`, () => {
  it('is pinned exactly, and the installed copy is the pinned one', () => {
    const manifest = json(path.join(ROOT, 'package.json')) as { dependencies: Record<string, string> }
    const lock = json(path.join(ROOT, 'package-lock.json')) as { packages: Record<string, { version?: string; dependencies?: Record<string, string> }> }
    const installed = (json(path.join(amqplibDir, 'package.json')) as { version: string }).version
    expect(manifest.dependencies.amqplib, 'package.json must pin amqplib exactly (no ^ or ~): typed-fields.ts patches its internals').toBe(PINNED)
    expect(lock.packages[''].dependencies?.amqplib, 'package-lock.json must carry the same exact spec as package.json').toBe(PINNED)
    expect(lock.packages['node_modules/amqplib'].version, 'package-lock.json resolves another amqplib than the one this test checks').toBe(PINNED)
    expect(installed, `node_modules holds amqplib ${installed}, not the pinned ${PINNED}: run npm ci`).toBe(PINNED)
  })

  it('lib/codec.js exports encodeTable(buffer, val, offset) and decodeFields(slice), which installTypedCodec replaces', () => {
    const codec = source('codec.js')
    expect(codec, 'lib/codec.js: encodeTable changed its signature; installTypedCodec wraps encodeTable(buffer, value, offset) -> bytes written').toMatch(/^function encodeTable\(buffer, val, offset\) \{/m)
    expect(codec, 'lib/codec.js: decodeFields changed its signature; installTypedCodec wraps decodeFields(slice) -> table').toMatch(/^function decodeFields\(slice\) \{/m)
    expect(codec, 'lib/codec.js no longer exports encodeTable as a module property installTypedCodec can replace').toMatch(/^module\.exports\.encodeTable = encodeTable;$/m)
    expect(codec, 'lib/codec.js no longer exports decodeFields as a module property installTypedCodec can replace').toMatch(/^module\.exports\.decodeFields = decodeFields;$/m)
    // The values typedTableToAmqplib mirrors for timestamps and decimals.
    expect(codec, "lib/codec.js: decodeFields no longer returns a timestamp as { '!': 'timestamp', value }; typedTableToAmqplib mirrors it").toContain("val = { '!': 'timestamp', value: val };")
    expect(codec, "lib/codec.js: decodeFields no longer returns a decimal as { '!': 'decimal', value: { places, digits } }; typedTableToAmqplib mirrors it").toContain("val = { '!': 'decimal', value: { places: places, digits: digits } };")
  })

  it('lib/defs.js copies the codec functions when it loads, into a 64 KiB encoding buffer', () => {
    const defs = source('defs.js')
    // Why amqplib.ts must patch the codec before defs.js is first required (and checks that it was).
    expect(defs, "lib/defs.js no longer takes its codec from require('./codec'); lib/server/platform/broker/amqplib.ts patches that module").toMatch(/var codec = require\('\.\/codec'\),/)
    expect(defs, 'lib/defs.js no longer copies codec.encodeTable into a local when it loads; the patch-before-load order in amqplib.ts assumes it does').toMatch(/^\s+encodeTable = codec\.encodeTable,$/m)
    expect(defs, 'lib/defs.js no longer copies codec.decodeFields into a local when it loads; the patch-before-load order in amqplib.ts assumes it does').toMatch(/^\s+decodeFields = codec\.decodeFields,$/m)
    expect(defs, 'lib/defs.js: the header encoding buffer is no longer 64 KiB; MAX_HEADER_TABLE_BYTES (replay/publish-message.ts) and typed-fields.ts assume it is').toMatch(/^\s+SCRATCH = Buffer\.alloc\(65536\),$/m)
    expect(MAX_HEADER_TABLE_BYTES).toBe(65536 - 4)
  })

  it("lib/api_args.js publishes the caller's headers under Object.create(headers) with CC and BCC", () => {
    const args = source('api_args.js')
    expect(args, "lib/api_args.js: publish() no longer wraps the caller's headers in Object.create(headers); typedPublishBody in typed-fields.ts walks that prototype chain").toContain('const headers = Object.create(options.headers || null);')
    expect(args, 'lib/api_args.js: publish() no longer sets CC on the wrapper; typedPublishBody encodes such extras the stock way').toContain("setIfDefined(headers, 'CC', convertCC(options.CC));")
    expect(args, 'lib/api_args.js: publish() no longer sets BCC on the wrapper; typedPublishBody encodes such extras the stock way').toContain("setIfDefined(headers, 'BCC', convertCC(options.BCC));")
  })

  it("keeps lib/ out of its exports map, so amqplib.ts requires lib/codec.js by file name beside the package's main", () => {
    const manifest = json(path.join(amqplibDir, 'package.json')) as { main: string; exports: Record<string, unknown> }
    expect(path.basename(createRequire(import.meta.url).resolve('amqplib')), "amqplib's main moved: amqplib.ts finds lib/ as the main file's directory + lib").toBe('channel_api.js')
    expect(manifest.main).toBe('./channel_api.js')
    expect(Object.keys(manifest.exports), "amqplib's exports map changed: amqplib.ts requires lib/codec.js and lib/defs.js by path").toEqual(['.', './callback_api'])
  })
})
