import { describe, expect, it } from 'vitest'
import {
  classifyFailure,
  EXCEPTION_KIND_RULES,
  matchExceptionRule,
  parseFailureKind,
  type FailureKindInput,
} from '@/lib/server/ingest/normalise/failure-kind'
import type { FailureKind } from '@/lib/server/ingest/types'

const base: FailureKindInput = { explicit: null, errorTypes: [], messages: [], deathReason: null, hasError: false }
const classify = (input: Partial<FailureKindInput>) => classifyFailure({ ...base, ...input })

describe('exception rules (docs/framework-headers.md#failure-kind)', () => {
  const cases: Array<[string | null, string | null, FailureKind | null]> = [
    // invalid: content will never be processable
    ['com.fasterxml.jackson.core.JsonParseException', "Unexpected character ('}' (code 125))", 'invalid'],
    ['com.fasterxml.jackson.databind.exc.MismatchedInputException', 'Cannot deserialize value', 'invalid'],
    ['jakarta.validation.ValidationException', 'email must not be blank', 'invalid'],
    ['jakarta.validation.ConstraintViolationException', 'price: must be positive', 'invalid'],
    ['org.springframework.web.bind.MethodArgumentNotValidException', 'x', 'invalid'],
    ['System.Runtime.Serialization.SerializationException', 'Type is not serializable', 'invalid'],
    ['System.Text.Json.JsonException', "'x' is an invalid start of a value", 'invalid'],
    ['System.FormatException', 'Input string was not in a correct format.', 'invalid'],
    ['System.ArgumentException', 'Value does not fall within the expected range.', 'invalid'],
    ['System.ArgumentNullException', "Value cannot be null. (Parameter 'sku')", 'invalid'],
    ['java.lang.IllegalArgumentException', 'No enum constant Status.SHIPPD', 'invalid'],
    ['java.lang.NumberFormatException', 'For input string: "12a"', 'invalid'],
    ['org.springframework.amqp.support.converter.MessageConversionException', 'Failed to convert Message content', 'invalid'],
    ['org.springframework.http.converter.HttpMessageNotReadableException', 'JSON parse error', 'invalid'],
    ['NServiceBus.MessageDeserializationException', 'An error occurred while attempting to extract logical messages', 'invalid'],
    ['Symfony\\Component\\Messenger\\Exception\\MessageDecodingFailedException', 'Could not decode message', 'invalid'],
    ['SyntaxError', 'Unexpected token } in JSON at position 12', 'invalid'],
    ['ZodError', '[{"code":"invalid_type"}]', 'invalid'],
    ['InvalidPayloadError', 'missing field', 'invalid'],
    ['json.decoder.JSONDecodeError', 'Expecting value: line 1 column 1 (char 0)', 'invalid'],
    ['pydantic_core._pydantic_core.ValidationError', '1 validation error for Order', 'invalid'],
    // transient: may succeed later
    ['System.TimeoutException', 'The operation has timed out.', 'transient'],
    ['java.net.SocketTimeoutException', 'Read timed out', 'transient'],
    ['System.Net.Sockets.SocketException', 'Connection refused', 'transient'],
    ['java.net.ConnectException', 'Connection refused', 'transient'],
    ['System.Net.Http.HttpRequestException', 'Response status code does not indicate success: 503 (Service Unavailable).', 'transient'],
    ['System.Net.Http.HttpRequestException', 'Response status code does not indicate success: 429 (Too Many Requests).', 'transient'],
    ['System.Net.Http.HttpRequestException', 'Response status code does not indicate success: 404 (Not Found).', null],
    ['System.Net.Http.HttpRequestException', 'No connection could be made because the target machine actively refused it.', 'transient'],
    ['System.Threading.Tasks.TaskCanceledException', 'The request was canceled due to the configured HttpClient.Timeout of 100 seconds elapsing.', 'transient'],
    ['org.springframework.web.client.HttpServerErrorException$BadGateway', '502 Bad Gateway', 'transient'],
    ['org.springframework.web.client.HttpClientErrorException$NotFound', '404 Not Found', null],
    ['org.springframework.dao.DeadlockLoserDataAccessException', 'deadlock detected', 'transient'],
    ['org.springframework.dao.CannotAcquireLockException', 'could not obtain lock', 'transient'],
    ['org.springframework.dao.TransientDataAccessResourceException', 'x', 'transient'],
    ['Polly.Timeout.TimeoutRejectedException', 'The delegate executed asynchronously through TimeoutPolicy did not complete within the timeout.', 'transient'],
    ['RabbitMQ.Client.Exceptions.BrokerUnreachableException', 'None of the specified endpoints were reachable', 'transient'],
    ['redis.exceptions.ConnectionError', 'Error 111 connecting to redis:6379. Connection refused.', 'transient'],
    ['ConnectionRefusedError', '[Errno 111] Connection refused', 'transient'],
    // generic types: the message decides
    ['Error', 'connect ECONNREFUSED 10.0.0.5:5432', 'transient'],
    ['Error', 'getaddrinfo EAI_AGAIN api.internal', 'transient'],
    ['java.lang.RuntimeException', 'Request failed with status code 503', 'transient'],
    ['System.Exception', 'Rate limit exceeded, retry in 30s', 'transient'],
    ['Exception', 'ERROR: deadlock detected', 'transient'],
    ['Exception', 'could not serialize access due to concurrent update', 'transient'],
    ['RuntimeException', 'Failed to parse order payload', 'invalid'],
    ['Exception', 'Invalid JSON in body', 'invalid'],
    ['Exception', 'Validation failed for field email', 'invalid'],
    // unclassified
    ['com.acme.InsufficientFundsException', 'Account 42 has insufficient funds', null],
    ['System.NullReferenceException', 'Object reference not set to an instance of an object.', null],
    ['TypeError', "Cannot read properties of undefined (reading 'id')", null],
    ['Exception', 'Order 500 not found', null],
    [null, null, null],
  ]
  it.each(cases)('%s: %j → %s', (type, message, kind) => {
    expect(matchExceptionRule([type], [message])?.kind ?? null).toBe(kind)
  })

  it('lets a type rule win over a message rule', () => {
    expect(matchExceptionRule(['System.FormatException'], ['timeout while reading'])?.kind).toBe('invalid')
  })

  it('is data: every rule has a name, a kind and at least one pattern', () => {
    for (const rule of EXCEPTION_KIND_RULES) {
      expect(rule.name).toMatch(/^[a-z0-9-]+$/)
      expect(['invalid', 'transient']).toContain(rule.kind)
      expect(rule.type ?? rule.message).toBeInstanceOf(RegExp)
    }
    expect(new Set(EXCEPTION_KIND_RULES.map((r) => r.name)).size).toBe(EXCEPTION_KIND_RULES.length)
  })

  it('accepts an extended rule table', () => {
    const rules = [{ name: 'funds', kind: 'invalid' as const, type: /^InsufficientFundsException$/ }, ...EXCEPTION_KIND_RULES]
    expect(matchExceptionRule(['com.acme.InsufficientFundsException'], [], rules)?.name).toBe('funds')
  })
})

describe('classifyFailure precedence', () => {
  const cases: Array<[string, Partial<FailureKindInput>, FailureKind, string[]]> = [
    ['explicit header wins', { explicit: 'transient', errorTypes: ['System.FormatException'], deathReason: 'expired' }, 'transient', []],
    ['explicit header is case- and underscore-tolerant', { explicit: ' Delivery_Limit ' }, 'delivery-limit', []],
    ['unknown explicit value is ignored and flagged', { explicit: 'meh', deathReason: 'maxlen' }, 'overflow', ['failure-kind-header-invalid']],
    ['prototype names are not kinds', { explicit: '__proto__', deathReason: 'constructor' }, 'unknown', ['failure-kind-header-invalid']],
    ['exception rule beats x-death', { errorTypes: ['ZodError'], deathReason: 'rejected', hasError: true }, 'invalid', []],
    ['expired', { deathReason: 'expired' }, 'expired', []],
    ['maxlen → overflow', { deathReason: 'maxlen' }, 'overflow', []],
    ['delivery_limit', { deathReason: 'delivery_limit', hasError: true }, 'delivery-limit', []],
    ['rejected with an unclassified error', { deathReason: 'rejected', errorTypes: ['com.acme.X'], hasError: true }, 'exhausted', []],
    ['rejected with nothing', { deathReason: 'rejected' }, 'exhausted', []],
    ['framework error record without x-death', { errorTypes: ['com.acme.X'], hasError: true }, 'exhausted', []],
    ['unknown reason', { deathReason: 'vanished' }, 'unknown', []],
    ['nothing at all', {}, 'unknown', []],
  ]
  it.each(cases)('%s', (_name, input, kind, flags) => {
    const result = classify(input)
    expect(result.kind).toBe(kind)
    expect(result.flags).toEqual(flags)
  })

  it('parses every enum value', () => {
    for (const kind of ['invalid', 'transient', 'exhausted', 'expired', 'overflow', 'delivery-limit', 'unknown'] as const) {
      expect(parseFailureKind(kind)).toBe(kind)
    }
    expect(parseFailureKind(null)).toBeNull()
  })
})
