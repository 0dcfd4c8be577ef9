import 'server-only'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import { getConfig } from '@/lib/server/platform/config'

/** The vhost a builder request names, or the one AMQP_URL connects to (the doctor's default too). */
export const builderVhost = (vhost: string | undefined): string => vhost ?? amqpVhost(getConfig().AMQP_URL)
