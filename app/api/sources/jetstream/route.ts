import { json, route } from '@/lib/server/platform/http/handle-route'
import { getJetStreamSourceFacts } from '@/lib/server/sources/jetstream-source-facts'

export const dynamic = 'force-dynamic'

// GET /api/sources/jetstream – the NATS server's facts about the JetStream sources: where their advisories are kept, how many wait for capture, each stream's retention
export const GET = route({ permission: 'sources:read' }, async ({ db, sourceIds }) => json(await getJetStreamSourceFacts({ db, sourceIds: await sourceIds() })))
