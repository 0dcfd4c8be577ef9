import type { APIRequestContext } from '@playwright/test'

/**
 * GET a JSON API for an `expect.poll`: a request that fails at the transport level (the server closing an idle
 * keep-alive connection just as the next request reuses it: ECONNRESET) yields undefined, so the poll asks again
 * instead of failing the test on the first try. HTTP errors still come back as their JSON.
 */
export async function pollJson<T = any>(request: APIRequestContext, url: string): Promise<T | undefined> {
  try {
    return (await (await request.get(url)).json()) as T
  } catch {
    return undefined
  }
}

/**
 * GET a JSON API once, outside a poll: a transport failure (the same idle keep-alive reset) is retried a few times,
 * and a request that still fails, or answers other than 2xx, throws with what it got. A single `pollJson` would give
 * undefined there, and an assertion on `undefined?.entries ?? []` then fails far from its cause.
 */
export async function getJson<T = any>(request: APIRequestContext, url: string, attempts = 3): Promise<T> {
  let lastError: unknown
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let response
    try {
      response = await request.get(url)
    } catch (error) {
      lastError = error
      continue
    }
    if (!response.ok()) throw new Error(`GET ${url} answered ${response.status()}: ${await response.text()}`)
    return (await response.json()) as T
  }
  throw new Error(`GET ${url} failed ${attempts} times: ${String(lastError)}`)
}
