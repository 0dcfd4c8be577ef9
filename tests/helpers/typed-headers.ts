import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'

export const b64 = (bytes: number[] | Buffer) => Buffer.from(bytes).toString('base64')

/**
 * One header of every AMQP field type that RabbitMQ carries through publishing and dead-lettering unchanged: integer
 * widths at their limits, int64 beyond 2^53, float, double, decimal, a long string that is not UTF-8, timestamp, byte
 * array, void, nested tables and arrays. (A boolean octet other than 0/1 is normalised by the broker, and NaN or
 * Infinity cannot be published at all: see typed-headers-broker.test.ts.)
 */
export const EVERY_BROKER_TYPE: TypedTable = {
  bool: { t: 't', v: true },
  'int8-min': { t: 'b', v: -128 },
  'uint8-max': { t: 'B', v: 255 },
  'int16-min': { t: 's', v: -32768 },
  'uint16-max': { t: 'u', v: 65535 },
  'int32-max': { t: 'I', v: 2147483647 },
  'uint32-max': { t: 'i', v: 4294967295 },
  'int64-max': { t: 'l', v: '9223372036854775807' },
  'beyond-2^53': { t: 'l', v: '9007199254740993' },
  float: { t: 'f', v: Math.fround(1.5) },
  double: { t: 'd', v: 0.1 },
  decimal: { t: 'D', v: { places: 3, digits: 1234567 } },
  'longstr-not-utf8': { t: 'S', b64: b64([0x66, 0xff, 0xfe, 0xc3, 0x28]) },
  timestamp: { t: 'T', v: '1764500000' },
  bytes: { t: 'x', b64: b64([0, 1, 2, 0xff]) },
  void: { t: 'V' },
  nested: { t: 'F', v: { inner: { t: 'A', v: [{ t: 'l', v: '-1' }, { t: 'F', v: { deep: { t: 'x', b64: b64([9]) } } }] } } },
}
