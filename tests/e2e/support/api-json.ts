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
