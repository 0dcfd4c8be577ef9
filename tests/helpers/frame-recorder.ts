import net from 'node:net'
import { AMQP_URL } from './broker'

/**
 * A TCP relay between an amqplib connection and the broker that keeps every byte the broker sends. It reads header
 * tables straight off the wire, independently of Lazarus' decoder, so a test can compare what RabbitMQ delivered
 * with what a replay sent, byte for byte.
 */
export type FrameRecorder = {
  /** AMQP_URL with the relay's port: connect through it to have the deliveries recorded. */
  url: string
  /** The raw contents (after the 4-byte length) of the header table of every content header received so far. */
  headerTables(): Buffer[]
  close(): Promise<void>
}

export async function recordFrames(): Promise<FrameRecorder> {
  const broker = new URL(AMQP_URL)
  const streams: Buffer[][] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const received: Buffer[] = []
    streams.push(received)
    const upstream = net.connect(Number(broker.port || 5672), broker.hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => {
        sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    upstream.on('data', (chunk: Buffer) => received.push(chunk))
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(AMQP_URL)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    headerTables: () => streams.flatMap((chunks) => headerTablesOf(Buffer.concat(chunks))),
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

const FRAME_HEADER = 2
const FRAME_END = 0xce

/** AMQP 0-9-1 frames (type, channel, size, payload, 0xCE); content headers carry basic.properties. */
function headerTablesOf(stream: Buffer): Buffer[] {
  const tables: Buffer[] = []
  let at = 0
  while (at + 7 <= stream.length) {
    const type = stream[at]
    const size = stream.readUInt32BE(at + 3)
    if (at + 7 + size + 1 > stream.length) break
    if (stream[at + 7 + size] !== FRAME_END) throw new Error(`frame at ${at} does not end in 0xCE`)
    if (type === FRAME_HEADER) {
      const table = propertiesHeaders(stream.subarray(at + 7, at + 7 + size))
      if (table) tables.push(Buffer.from(table))
    }
    at += 8 + size
  }
  return tables
}

/** class (2), weight (2), body size (8), property flags, then content-type and content-encoding before the headers. */
function propertiesHeaders(payload: Buffer): Buffer | null {
  let at = 12
  const flags = payload.readUInt16BE(at)
  at += 2
  for (let more = flags & 1; more; more = payload.readUInt16BE(at - 2) & 1) at += 2
  if (flags & 0x8000) at += 1 + payload[at]
  if (flags & 0x4000) at += 1 + payload[at]
  if (!(flags & 0x2000)) return null
  const length = payload.readUInt32BE(at)
  return payload.subarray(at + 4, at + 4 + length)
}

/** Bytes each fixed-size field value takes after its tag (RabbitMQ's tags). */
const FIXED: Record<string, number> = { t: 1, b: 1, B: 1, s: 2, u: 2, I: 4, i: 4, l: 8, T: 8, f: 4, d: 8, D: 5, V: 0 }

/**
 * The top-level fields of a table's contents, each as its exact bytes (key length, key, tag, value), without
 * decoding the values: nested tables and arrays are skipped over by their length, however deep they go.
 */
export function tableFields(contents: Buffer): { key: string; bytes: Buffer }[] {
  const fields: { key: string; bytes: Buffer }[] = []
  let at = 0
  while (at < contents.length) {
    const start = at
    const keyLength = contents[at]
    const key = contents.toString('utf8', at + 1, at + 1 + keyLength)
    at += 1 + keyLength
    const tag = String.fromCharCode(contents[at])
    at += 1
    if (tag in FIXED) at += FIXED[tag]
    else if ('SxFA'.includes(tag)) at += 4 + contents.readUInt32BE(at)
    else throw new Error(`unknown tag ${tag} for ${key}`)
    if (at > contents.length) throw new Error(`field ${key} runs past the table`)
    fields.push({ key, bytes: contents.subarray(start, at) })
  }
  return fields
}
