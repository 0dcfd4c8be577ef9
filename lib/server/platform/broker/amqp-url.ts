import 'server-only'

/** The vhost an AMQP URL connects to (`amqp://host` and `amqp://host/` mean the default vhost, `/`). */
export function amqpVhost(amqpUrl: string): string {
  const path = new URL(amqpUrl).pathname
  return path.length > 1 ? decodeURIComponent(path.slice(1)) : '/'
}
