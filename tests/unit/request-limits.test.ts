import { describe, expect, it } from 'vitest'
import { parseConfig } from '@/lib/server/platform/config'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { beginExport, beginRequest, countMutation, releaseWhenDone } from '@/lib/server/platform/http/request-limits'

/* The per-caller limits (docs/security.md, "Limits"), with a configuration of small numbers. */

const config = parseConfig({ LAZARUS_MUTATIONS_PER_MINUTE: '3', LAZARUS_EXPORTS_PER_MINUTE: '5', LAZARUS_CONCURRENT_EXPORTS: '2', LAZARUS_CONCURRENT_REQUESTS: '2' })
const refused = async (p: Promise<unknown> | (() => unknown)) => {
  try {
    await (typeof p === 'function' ? p() : p)
    return null
  } catch (error) {
    return error as AppError
  }
}

describe('per-caller limits', () => {
  it('changes per minute: the fourth is refused with 429 and a retry time, others are not affected', async () => {
    for (let i = 0; i < 3; i++) await countMutation(config, 'user:mut')
    const error = await refused(countMutation(config, 'user:mut'))
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ code: 'rate_limited', status: 429 })
    expect((error!.details as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThan(0)
    await countMutation(config, 'user:someone-else')
  })

  it('requests in progress: a third at once is refused until one ends', async () => {
    const a = beginRequest(config, 'user:busy')
    const b = beginRequest(config, 'user:busy')
    expect(await refused(() => beginRequest(config, 'user:busy'))).toMatchObject({ code: 'rate_limited' })
    a()
    a() // releasing twice frees one slot only
    const c = beginRequest(config, 'user:busy')
    expect(await refused(() => beginRequest(config, 'user:busy'))).toMatchObject({ code: 'rate_limited' })
    b()
    c()
  })

  it('exports at once: the slot is held until the download is read to the end or cancelled', async () => {
    const body = () => new ReadableStream<Uint8Array>({ start: (c) => { c.enqueue(new Uint8Array([1])); c.close() } })
    const first = releaseWhenDone(body(), await beginExport(config, 'user:exp'))
    const second = releaseWhenDone(body(), await beginExport(config, 'user:exp'))
    expect(await refused(beginExport(config, 'user:exp'))).toMatchObject({ code: 'rate_limited' })
    await new Response(first).arrayBuffer()
    const third = releaseWhenDone(body(), await beginExport(config, 'user:exp'))
    await second.cancel()
    await third.cancel()
    // Five exports a minute: two more fit, the sixth does not.
    ;(await beginExport(config, 'user:exp'))()
    ;(await beginExport(config, 'user:exp'))()
    expect(await refused(beginExport(config, 'user:exp'))).toMatchObject({ code: 'rate_limited' })
  })
})
