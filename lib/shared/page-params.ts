import { z } from 'zod'

/** Dynamic segments of the pages (`/groups/[id]`, `/messages/[id]`): database ids, as the API spells them. */
export const pageIdSchema = z.string().regex(/^[1-9][0-9]{0,18}$/)
