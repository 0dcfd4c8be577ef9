import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '@/lib/server/platform/config'
import { classifyAddress } from '@/lib/server/alerts/webhook-address'
import { createWebhookPolicy, type Resolve } from '@/lib/server/alerts/webhook-policy'
import { parseAllowedWebhookHost, updateWebhookSettingsSchema } from '@/lib/shared/schemas/webhook-settings'

describe('webhook address classifier', () => {
  // Every spelling of 127.0.0.1 a resolver, a URL parser or inet_aton accepts.
  const loopbackForms = [
    '127.0.0.1',
    '127.255.255.254',
    '0x7f000001',
    '0X7F000001',
    '2130706433',
    '017700000001',
    '0177.0.0.1',
    '0x7f.0.0.1',
    '0x7f.0x0.0x0.0x1',
    '127.1',
    '127.0.1',
    '0x7f.1',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '[::ffff:127.0.0.1]',
    '0:0:0:0:0:ffff:7f00:1',
    '::127.0.0.1',
    '::ffff:0:127.0.0.1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::7f00:1',
  ]
  for (const form of loopbackForms) {
    it(`refuses ${form} as loopback`, () => {
      expect(classifyAddress(form)).toMatchObject({ refused: 'loopback', alwaysRefused: false })
    })
  }

  const refused: [string, string, boolean][] = [
    ['10.1.2.3', 'private', false],
    ['012.1.2.3', 'private', false], // octal 012 = 10
    ['167837955', 'private', false], // 10.1.2.3 as one number
    ['0xa010203', 'private', false],
    ['172.16.0.1', 'private', false],
    ['172.31.255.255', 'private', false],
    ['192.168.1.1', 'private', false],
    ['::ffff:192.168.1.1', 'private', false],
    ['64:ff9b::10.0.0.1', 'private', false],
    ['100.64.0.1', 'shared', false],
    ['100.127.255.254', 'shared', false],
    ['100.100.100.200', 'shared', false], // Alibaba's metadata service sits in CGNAT space
    ['fc00::1', 'private', false],
    ['fd12:3456::1', 'private', false],
    ['fec0::1', 'private', false],
    ['169.254.1.1', 'link-local', false],
    ['fe80::1', 'link-local', false],
    ['fe80::1%eth0', 'link-local', false],
    ['169.254.169.254', 'metadata', true],
    ['0xa9fea9fe', 'metadata', true],
    ['2852039166', 'metadata', true],
    ['::ffff:169.254.169.254', 'metadata', true],
    ['64:ff9b::a9fe:a9fe', 'metadata', true],
    ['fd00:ec2::254', 'metadata', true],
    ['0.0.0.0', 'unspecified', true],
    ['0', 'unspecified', true],
    ['0.1.2.3', 'unspecified', true],
    ['::', 'unspecified', true],
    ['::ffff:0.0.0.0', 'unspecified', true],
    ['224.0.0.1', 'multicast', true],
    ['239.255.255.250', 'multicast', true],
    ['ff02::1', 'multicast', true],
    ['255.255.255.255', 'broadcast', true],
    ['240.0.0.1', 'reserved', false],
    ['192.0.2.1', 'reserved', false],
    ['198.18.0.1', 'reserved', false],
    ['2001:db8::1', 'reserved', false],
    ['2002:7f00:1::1', 'reserved', false], // 6to4 tunnelling to 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved', false], // Teredo
    ['64:ff9b:1::a01:203', 'reserved', false], // local-use NAT64 (RFC 8215): the embedding is not fixed
    ['100::1', 'reserved', false],
    ['::2', 'reserved', false],
    ['4000::1', 'reserved', false],
    ['example.com', 'not an address', true],
    ['127.0.0.1.', 'not an address', true],
    ['', 'not an address', true],
  ]
  for (const [form, range, always] of refused) {
    it(`refuses ${JSON.stringify(form)} as ${range}${always ? ', even when allow-listed' : ''}`, () => {
      expect(classifyAddress(form)).toMatchObject({ refused: range, alwaysRefused: always })
    })
  }

  const publicForms: [string, string][] = [
    ['93.184.215.14', '93.184.215.14'],
    ['1.1.1.1', '1.1.1.1'],
    ['16843009', '1.1.1.1'],
    ['0x01010101', '1.1.1.1'],
    ['100.63.255.255', '100.63.255.255'], // just below CGNAT
    ['172.32.0.1', '172.32.0.1'], // just above 172.16/12
    ['::ffff:1.1.1.1', '1.1.1.1'],
    ['64:ff9b::1.1.1.1', '1.1.1.1'], // NAT64 to a public address: legitimate on IPv6-only networks
    ['2606:4700:4700::1111', '2606:4700:4700::1111'],
    ['[2a00:1450:4001:80e::200e]', '2a00:1450:4001:80e::200e'],
  ]
  for (const [form, address] of publicForms) {
    it(`allows the public address ${form} (${address})`, () => {
      expect(classifyAddress(form)).toEqual({ address, kind: address.includes(':') ? 'ipv6' : 'ipv4', refused: null, alwaysRefused: false })
    })
  }

  it('names the IPv4 address behind mapped and NAT64 forms, since that is where the packets go', () => {
    expect(classifyAddress('::ffff:7f00:1').address).toBe('127.0.0.1')
    expect(classifyAddress('64:ff9b::a01:203').address).toBe('10.1.2.3')
    expect(classifyAddress('0177.0.0.1').address).toBe('127.0.0.1')
  })
})

describe('webhook address policy', () => {
  const fixed = (table: Record<string, string[]>): Resolve => async (hostname) => {
    const addresses = table[hostname]
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }

  it('refuses loopback, private and metadata addresses with a message naming the address and its kind', () => {
    const policy = createWebhookPolicy({ allowedHosts: [] })
    expect(policy.refusal('127.0.0.1', '127.0.0.1')).toMatch(/^refused: 127\.0\.0\.1 is a loopback address \(an admin can allow it/)
    expect(policy.refusal('hooks.corp', '10.1.2.3')).toMatch(/^refused: hooks\.corp resolves to 10\.1\.2\.3, a private address/)
    expect(policy.refusal('::ffff:7f00:1', '::ffff:7f00:1')).toMatch(/^refused: ::ffff:7f00:1 is 127\.0\.0\.1, a loopback address/)
    expect(policy.refusal('169.254.169.254', '169.254.169.254')).toBe('refused: 169.254.169.254 is a cloud metadata address')
    expect(policy.refusal('hooks.example.com', '93.184.215.14')).toBeNull()
  })

  it('lets allow-listed addresses, ranges and names through, but never metadata, unspecified or multicast', () => {
    const policy = createWebhookPolicy({ allowedHosts: ['10.1.2.3', '192.168.0.0/16', 'fd00::/8', 'mattermost.corp', '127.0.0.1'] })
    expect(policy.refusal('10.1.2.3', '10.1.2.3')).toBeNull()
    expect(policy.refusal('chat.corp', '10.1.2.3')).toBeNull() // an address entry holds under any name
    expect(policy.refusal('10.1.2.4', '10.1.2.4')).toMatch(/^refused: /)
    expect(policy.refusal('192.168.44.5', '192.168.44.5')).toBeNull()
    expect(policy.refusal('::ffff:192.168.44.5', '::ffff:c0a8:2c05')).toBeNull() // mapped form matches the IPv4 range
    expect(policy.refusal('fd00::5', 'fd00::5')).toBeNull()
    expect(policy.refusal('mattermost.corp', '10.9.9.9')).toBeNull() // a name entry allows what that name resolves to
    expect(policy.refusal('Mattermost.Corp.', '10.9.9.9')).toBeNull()
    expect(policy.refusal('other.corp', '10.9.9.9')).toMatch(/^refused: other\.corp resolves to 10\.9\.9\.9/)
    expect(policy.refusal('127.0.0.1', '127.0.0.1')).toBeNull()
    expect(policy.refusal('mattermost.corp', '169.254.169.254')).toMatch(/metadata/)
    expect(policy.refusal('fd00:ec2::254', 'fd00:ec2::254')).toMatch(/metadata/) // inside the allowed fd00::/8
    expect(createWebhookPolicy({ allowedHosts: ['0.0.0.0/0'] }).refusal('0.0.0.0', '0.0.0.0')).toMatch(/unspecified/)
    expect(createWebhookPolicy({ allowedHosts: ['224.0.0.0/4'] }).refusal('224.0.0.1', '224.0.0.1')).toMatch(/multicast/)
  })

  it('checks a URL at save time by resolving its host; numeric forms are caught after URL parsing', async () => {
    const policy = createWebhookPolicy({
      allowedHosts: [],
      resolve: fixed({ 'hooks.example.com': ['93.184.215.14'], 'rebind.example.com': ['127.0.0.1'], 'mixed.example.com': ['10.0.0.1', '93.184.215.14'] }),
    })
    expect(await policy.check('https://hooks.example.com/x')).toBeNull()
    expect(await policy.check('https://mixed.example.com/x')).toBeNull() // delivery connects to the public one only
    expect(await policy.check('https://rebind.example.com/x')).toMatch(/^refused: rebind\.example\.com resolves to 127\.0\.0\.1, a loopback address/)
    for (const url of ['http://0x7f000001/', 'http://2130706433/', 'http://0177.0.0.1/', 'http://127.1/', 'http://[::ffff:127.0.0.1]/', 'http://[64:ff9b::7f00:1]/']) {
      expect(await policy.check(url), url).toMatch(/^refused: .*loopback/)
    }
    expect(await policy.check('http://nowhere.example.com/')).toBe('nowhere.example.com does not resolve (ENOTFOUND)')
    expect(await policy.check('https://user:pw@hooks.example.com/')).toBe('must not contain a user name or password')
    expect(await policy.check('ftp://hooks.example.com/')).toBe('must be an http(s) URL')
  })

  it('gives a connection only the allowed addresses of a name, or refuses it', async () => {
    const policy = createWebhookPolicy({ allowedHosts: [], resolve: fixed({ 'mixed.example.com': ['10.0.0.1', '93.184.215.14', '::1'], 'rebind.example.com': ['127.0.0.1', '::1'] }) })
    const lookup = (hostname: string, all: boolean) =>
      new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
        policy.lookup(hostname, { all }, (error, address, family) => resolve({ error, address, family })),
      )
    expect(await lookup('mixed.example.com', true)).toEqual({ error: null, address: [{ address: '93.184.215.14', family: 4 }], family: undefined })
    expect(await lookup('mixed.example.com', false)).toEqual({ error: null, address: '93.184.215.14', family: 4 })
    const refused = await lookup('rebind.example.com', true)
    expect(refused.error?.message).toMatch(/^refused: rebind\.example\.com resolves to 127\.0\.0\.1, a loopback address/)
    expect((await lookup('nowhere.example.com', false)).error).toMatchObject({ code: 'ENOTFOUND' })
  })
})

describe('webhook allow-list entries', () => {
  const good: [string, string][] = [
    ['10.1.2.3', '10.1.2.3'],
    [' 10.1.2.3 ', '10.1.2.3'],
    ['10.1.2.3/16', '10.1.0.0/16'],
    ['127.0.0.0/8', '127.0.0.0/8'],
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['FD00:0:0:0:0:0:0:5', 'fd00::5'],
    ['fd00::/8', 'fd00::/8'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['Mattermost.Corp.', 'mattermost.corp'],
    ['localhost', 'localhost'],
    ['_hooks.internal', '_hooks.internal'],
  ]
  for (const [raw, entry] of good) {
    it(`stores ${JSON.stringify(raw)} as ${entry}`, () => expect(parseAllowedWebhookHost(raw)).toEqual({ entry }))
  }
  const bad: [string, RegExp][] = [
    ['0177.0.0.1', /four decimal numbers/],
    ['0x7f000001', /four decimal numbers/],
    ['2130706433', /four decimal numbers/],
    ['127.1', /four decimal numbers/],
    ['0x0a.0.0.0/8', /four decimal numbers/],
    ['10.0.0.0/33', /CIDR/],
    ['::ffff:10.0.0.0/104', /IPv4-mapped/],
    ['fe80::1%eth0', /zone/],
    ['256.1.1.1', /not a host name/],
    ['http://hooks.corp', /not a host name/],
    ['hooks corp', /not a host name/],
    ['', /not a host name/],
  ]
  for (const [raw, problem] of bad) {
    it(`refuses ${JSON.stringify(raw)}`, () => expect(parseAllowedWebhookHost(raw)).toEqual({ problem: expect.stringMatching(problem) }))
  }

  it('PUT input is canonicalised and de-duplicated; a bad entry is reported at its index', () => {
    expect(updateWebhookSettingsSchema.parse({ allowedHosts: ['10.1.2.3', '10.1.2.3/32', 'A.corp', 'a.corp.'] })).toEqual({ allowedHosts: ['10.1.2.3', '10.1.2.3/32', 'a.corp'] })
    const result = updateWebhookSettingsSchema.safeParse({ allowedHosts: ['a.corp', '0177.0.0.1'] })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]).toMatchObject({ path: ['allowedHosts', 1], message: expect.stringMatching(/four decimal numbers/) })
  })
})

describe('LAZARUS_WEBHOOK_ALLOWED_HOSTS', () => {
  it('is a comma-separated list of canonical entries, empty by default', () => {
    expect(parseConfig({}).LAZARUS_WEBHOOK_ALLOWED_HOSTS).toEqual([])
    expect(parseConfig({ LAZARUS_WEBHOOK_ALLOWED_HOSTS: ' 127.0.0.1, Mattermost.Corp ,,10.8.1.0/16,[::1]' }).LAZARUS_WEBHOOK_ALLOWED_HOSTS).toEqual([
      '127.0.0.1',
      'mattermost.corp',
      '10.8.0.0/16',
      '::1',
    ])
  })

  it('stops start-up with a message naming the variable for an entry that could be read two ways', () => {
    expect(() => parseConfig({ LAZARUS_WEBHOOK_ALLOWED_HOSTS: '10.1.2.3,0177.0.0.1' })).toThrow(ConfigError)
    expect(() => parseConfig({ LAZARUS_WEBHOOK_ALLOWED_HOSTS: '10.1.2.3,0177.0.0.1' })).toThrow(/LAZARUS_WEBHOOK_ALLOWED_HOSTS\.1: write IPv4 addresses as four decimal numbers/)
  })
})
