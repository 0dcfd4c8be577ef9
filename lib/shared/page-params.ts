import { z } from 'zod'
import { isInt8Id } from './schemas/fields'

/** Dynamic segments of the pages (`/groups/[id]`, `/messages/[id]`): database ids, as the API spells them. */
export const pageIdSchema = z.string().refine(isInt8Id)
