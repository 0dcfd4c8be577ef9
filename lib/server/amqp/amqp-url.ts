import 'server-only'

/** The vhost an AMQP URL connects to: its path, percent-decoded (`amqp://host/%2F` is `/`); none means `/`. */
export function vhostOf(amqpUrl: string): string {
  const path = new URL(amqpUrl).pathname
  return path.length > 1 ? decodeURIComponent(path.slice(1)) : '/'
}
