import 'server-only'
import type { Server } from 'node:http'

/**
 * How long an idle keep-alive connection stays open. Longer than the idle timeout of the proxies that usually sit in
 * front (60 s for AWS ALB, nginx and most ingress controllers): the side that closes an idle connection must be the
 * client, or a request sent the moment the server closes it dies with "socket hang up". Node's default, 5 s, made
 * that race common for any client pausing a few seconds between requests.
 */
export const KEEP_ALIVE_MS = 65_000

/**
 * The socket timeouts of the HTTP server. A slow client may not hold a request forever (slowloris); the headers
 * deadline stays above the keep-alive time, as Node requires for the two to work together.
 */
export function applyConnectionTimeouts(server: Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_MS
  server.headersTimeout = KEEP_ALIVE_MS + 1_000
  server.requestTimeout = 5 * 60_000
}
