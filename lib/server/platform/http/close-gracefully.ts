import 'server-only'
import type { Server } from 'node:http'

/**
 * Stops an HTTP server the way a rolling restart needs (docs/operations.md#kubernetes): no new connections, idle
 * keep-alive connections closed at once, and the requests in flight answered, each with `Connection: close` so its
 * client reconnects to another replica (`closing()` tells the request handler). Resolves when the last connection is
 * gone, or after `graceMs`, when whatever is left is cut.
 */
export function gracefulCloser(server: Server): { closing: () => boolean; close: (graceMs: number) => Promise<void> } {
  let closing = false
  return {
    closing: () => closing,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        closing = true
        const timer = setTimeout(() => {
          server.closeAllConnections()
          resolve()
        }, graceMs)
        server.close(() => {
          clearTimeout(timer)
          resolve()
        })
        server.closeIdleConnections()
      }),
  }
}
