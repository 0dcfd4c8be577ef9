import { describe, expect, expectTypeOf, it } from 'vitest'
import type { z } from 'zod'
import { ENTITY_KEY_PROPERTIES, parseGuardPause, type EntityKeyRule } from '@/packages/guard/src/protocol'
import { isValidEntityKeyRule } from '@/lib/server/ingest/normalise/entity-key'
import { entityKeyRuleSchema } from '@/lib/shared/schemas/source'

/**
 * One entity-key rule: the guard defines it (it imports nothing of Lazarus), the API's schema validates it, the
 * drainer and the guard apply it. The type assertions run in `tsc --noEmit`; the runtime ones here.
 */
describe('EntityKeyRule', () => {
  it('the API schema parses to and accepts exactly the guard’s type', () => {
    expectTypeOf<z.infer<typeof entityKeyRuleSchema>>().toEqualTypeOf<EntityKeyRule>()
    expectTypeOf<z.input<typeof entityKeyRuleSchema>>().toEqualTypeOf<EntityKeyRule>()
  })

  const pause = (entityKeyRule: unknown) => parseGuardPause({ id: '1', vhost: '/', queue: 'q', entityKey: 'E-1', status: 'active', version: 1, entityKeyRule })?.entityKeyRule ?? null

  it.each(ENTITY_KEY_PROPERTIES)('the schema, the drainer and the guard all take property %s', (name) => {
    const rule = { kind: 'property', name }
    expect(entityKeyRuleSchema.safeParse(rule).success).toBe(true)
    expect(isValidEntityKeyRule(rule)).toBe(true)
    expect(pause(rule)).toEqual(rule)
  })

  it.each([
    { kind: 'property', name: 'contentType' },
    { kind: 'header', name: '' },
    { kind: 'body', pointer: '/id' },
    null,
  ])('none of them takes %j', (rule) => {
    expect(entityKeyRuleSchema.safeParse(rule).success).toBe(false)
    expect(isValidEntityKeyRule(rule)).toBe(false)
    expect(pause(rule)).toBeNull()
  })
})
