import 'server-only'
import { MAX_JSON_BYTES } from '@/lib/server/platform/http/handle-route'

/** The one route that takes a message body's replacement: POST /api/messages/{id}/revisions. */
export const REVISIONS_PATH = /^\/api\/messages\/[^/]+\/revisions$/

/**
 * The most that route reads: a body of LAZARUS_REPLAY_MAX_BODY_BYTES as base64 in JSON (4 bytes per 3) or as a
 * multipart file, plus the headers and properties beside it (up to the ordinary JSON limit). Every other request
 * stays under MAX_JSON_BYTES (docs/security.md, "The HTTP surface").
 */
export const revisionRequestBytes = (maxBodyBytes: number): number => Math.ceil(maxBodyBytes / 3) * 4 + MAX_JSON_BYTES
