import { describe, expect, it } from 'vitest'
import { EMPTY_STAGING_DRAFT } from '@/components/replays/plan-staging'
import { INITIAL_CHOICES, parseRate, planChoicesReducer, planRequest, startAtOf, targetRefusal, type PlanChoice, type PlanChoices } from '@/components/replays/replay-plan-state'
import { ApiError } from '@/lib/client/api'

const choose = (...actions: PlanChoice[]): PlanChoices => actions.reduce(planChoicesReducer, INITIAL_CHOICES)
const settledNothing = { custom: { exchange: '', routingKey: '' }, rate: null, staging: null }

describe('the replay plan dialog: what the operator chose (components/replays/replay-plan-state.ts)', () => {
  it('starts from the plan’s own offers: no target, rate, pausing or staging chosen', () => {
    expect(INITIAL_CHOICES).toMatchObject({ targetType: null, rateText: null, pauseEntities: null, stagedChoice: null, allowFanOut: false, onlyNewest: false, startText: '', typedCount: '' })
    expect(planRequest({ ids: ['1'] }, INITIAL_CHOICES, settledNothing)).toEqual({ selection: { ids: ['1'] } })
  })

  it('forgets an allowed fan-out when another target is chosen, and keeps the custom target while typing', () => {
    const allowed = choose({ type: 'allow-fan-out', allow: true })
    expect(allowed.allowFanOut).toBe(true)
    expect(planChoicesReducer(allowed, { type: 'target', target: 'queue' })).toMatchObject({ targetType: 'queue', allowFanOut: false })
    const custom = choose({ type: 'target', target: 'custom' }, { type: 'custom-target', exchange: 'orders' }, { type: 'custom-target', routingKey: 'order.created' })
    expect(custom).toMatchObject({ targetType: 'custom', exchange: 'orders', routingKey: 'order.created' })
  })

  it('changes one choice per action and nothing else', () => {
    const draft = { ...EMPTY_STAGING_DRAFT, canary: '10' }
    const all = choose(
      { type: 'rate', text: '250' },
      { type: 'pause-entities', pause: false },
      { type: 'only-newest', onlyNewest: true },
      { type: 'staged', staged: true },
      { type: 'staging-draft', draft },
      { type: 'start', text: '2030-01-01T10:00' },
      { type: 'typed-count', text: '5000' },
    )
    expect(all).toEqual({ ...INITIAL_CHOICES, rateText: '250', pauseEntities: false, onlyNewest: true, stagedChoice: true, stagingDraft: draft, startText: '2030-01-01T10:00', typedCount: '5000' })
  })

  it('builds the request from the choices and the settled typed values only', () => {
    const choices = choose({ type: 'target', target: 'custom' }, { type: 'pause-entities', pause: true }, { type: 'allow-fan-out', allow: true }, { type: 'only-newest', onlyNewest: true })
    const request = planRequest({ groupId: '4' }, choices, { custom: { exchange: '  orders ', routingKey: ' key' }, rate: 120, staging: { canaryCount: 10 } })
    expect(request).toEqual({
      selection: { groupId: '4' },
      target: { type: 'custom', exchange: 'orders', routingKey: ' key' },
      ratePerSecond: 120,
      pauseEntities: true,
      allowFanOut: true,
      staging: { canaryCount: 10 },
      onlyNewestPerEntity: true,
    })
    expect(planRequest({ ids: ['1'] }, choose({ type: 'target', target: 'queue' }), settledNothing)).toEqual({ selection: { ids: ['1'] }, target: { type: 'queue' } })
  })

  it('takes a rate of 1 to 50,000 whole messages per second', () => {
    expect(['1', ' 500 ', '50000'].map(parseRate)).toEqual([1, 500, 50_000])
    expect(['0', '50001', '1.5', '', 'ten', '-3', '1234567'].map(parseRate)).toEqual([null, null, null, null, null, null, null])
  })

  it('takes a start time in the future, or none', () => {
    const now = Date.parse('2030-01-01T10:00:00Z')
    expect(startAtOf('', now)).toEqual({ startAt: null, invalid: false })
    expect(startAtOf('2030-01-01T11:00:00Z', now)).toEqual({ startAt: new Date('2030-01-01T11:00:00Z'), invalid: false })
    expect(startAtOf('2030-01-01T09:00:00Z', now).invalid).toBe(true)
    expect(startAtOf('not a time', now).invalid).toBe(true)
  })

  it('recognises the API’s refusal of a target, and only that', () => {
    expect(targetRefusal(new ApiError(422, 'unprocessable', 'amq.* is refused', { refused: 'amq.direct', allowedPatterns: ['orders', 7] }))).toEqual({ message: 'amq.* is refused', allowedPatterns: ['orders'] })
    expect(targetRefusal(new ApiError(422, 'unprocessable', 'refused', { refused: 'x' }))).toEqual({ message: 'refused', allowedPatterns: null })
    expect(targetRefusal(new ApiError(422, 'unprocessable', 'other', {}))).toBeNull()
    expect(targetRefusal(new ApiError(400, 'bad_request', 'refused', { refused: 'x' }))).toBeNull()
    expect(targetRefusal(new Error('network'))).toBeNull()
  })
})
