import 'server-only'

export type StackLanguage = 'java' | 'dotnet' | 'python' | 'php' | 'node'

export type Frame = {
  /** Canonical `module.function`: no line numbers, columns, file paths, argument lists or generated suffixes. */
  fn: string
  /** Source file, kept only for languages whose frames are identified by location (Node, Python). */
  file: string | null
  /** Library or runtime code recognised by its location (site-packages, Python stdlib, node: builtins, PHP builtins). */
  library: boolean
}

/** docs/framework-headers.md#stack-frames, plus `node:` (Node builtins print as `node:internal/…`, `node:net`). */
export const DEFAULT_NOT_IN_APP_PREFIXES: readonly string[] = [
  'java.',
  'javax.',
  'jdk.',
  'sun.',
  'kotlin.',
  'org.springframework.',
  'com.rabbitmq.',
  'reactor.',
  'System.',
  'Microsoft.',
  'MassTransit.',
  'NServiceBus.',
  'Rebus.',
  'Wolverine.',
  'JasperFx.',
  'EasyNetQ.',
  'RabbitMQ.Client.',
  'Polly.',
  'Paramore.Brighter.',
  'Symfony\\',
  'Illuminate\\',
  'celery.',
  'kombu.',
  'node_modules/',
  'internal/',
  'node:',
]

export type FrameOptions = {
  /** Added to DEFAULT_NOT_IN_APP_PREFIXES. */
  notInAppPrefixes?: readonly string[]
  /** When non-empty, only frames matching one of these are in-app (an allow-list, as in Sentry's in-app rules). */
  inAppPrefixes?: readonly string[]
}

function matchesPrefix(frame: Frame, prefix: string): boolean {
  if (!prefix) return false
  if (frame.fn.startsWith(prefix)) return true
  const file = frame.file
  if (file === null) return false
  if (file.startsWith(prefix)) return true
  // Path-like prefixes match a directory anywhere in the file path (`/app/node_modules/x.js`), after a slash or a
  // colon. Searched without building `/${prefix}`: this runs for every frame of every drained message.
  if (!prefix.endsWith('/')) return false
  for (let at = file.indexOf(prefix, 1); at > 0; at = file.indexOf(prefix, at + 1)) {
    const before = file.charCodeAt(at - 1)
    if (before === SLASH || before === COLON) return true
  }
  return false
}

const SLASH = 0x2f
const COLON = 0x3a

/** Indexed loops, no arrays or closures per call: the drainer asks this for every frame of every message. */
function matchesAny(frame: Frame, prefixes: readonly string[]): boolean {
  for (let i = 0; i < prefixes.length; i++) if (matchesPrefix(frame, prefixes[i])) return true
  return false
}

export function isInAppFrame(frame: Frame, options: FrameOptions = {}): boolean {
  const allow = options.inAppPrefixes
  if (allow !== undefined && allow.length > 0) return matchesAny(frame, allow)
  if (frame.library) return false
  if (matchesAny(frame, DEFAULT_NOT_IN_APP_PREFIXES)) return false
  const deny = options.notInAppPrefixes
  return deny === undefined || !matchesAny(frame, deny)
}

/** The first `limit` in-app frames, without testing the frames past them. */
export function firstInAppFrames(frames: readonly Frame[], limit: number, options?: FrameOptions): Frame[] {
  const found: Frame[] = []
  for (let i = 0; i < frames.length && found.length < limit; i++) if (isInAppFrame(frames[i], options)) found.push(frames[i])
  return found
}

/** Longer lines are not stack frames, and regexes over them only cost time. */
export const MAX_FRAME_LINE = 2000

// Every frame pattern is anchored and free of nested or overlapping quantifiers, so matching stays linear
// in the line length whatever a hostile header holds.
const JAVA_FRAME = /^\s*at\s+(\S+?)\(([^()]*)\)\s*$/
const DOTNET_FRAME_START = /^\s*at\s+([^\s(]+)\(/
const NODE_FRAME_START = /^\s*at\s+/
const PYTHON_FRAME = /^\s*File "([^"]*)", line \d+(?:, in (.+))?$/
const PHP_FRAME = /^#\d+\s+(?:[^()]*\(\d+\)|\[internal function\]):\s+(.+)$/

/** `at Ns.Type.Method(args)` optionally followed by ` in path:line N`. */
export function matchDotnetFrame(line: string): string | null {
  if (line.length > MAX_FRAME_LINE) return null
  const m = DOTNET_FRAME_START.exec(line)
  if (!m) return null
  const end = line.trimEnd()
  return end.endsWith(')') || /:line \d+$/.test(end) ? m[1] : null
}

function canonicalJava(raw: string): string {
  return (
    raw
      // Hidden-class lambdas carry an address that changes on every JVM start.
      .replace(/\$\$Lambda(?:\$\d+)?(?:\/(?:0x)?[0-9a-fA-F]+)?/g, () => '$$Lambda')
      .replace(/(\$\$\w*CGLIB)\$\$\w+/g, (_m, name: string) => name)
      .replace(/(Generated\w*Accessor)\d+/g, (_m, name: string) => name)
      .replace(/\$Proxy\d+/g, () => '$Proxy')
      .replace(/\bjdk\.proxy\d+\./g, 'jdk.proxy.')
      .replace(/lambda\$(\w+?)\$\d+/g, (_m, name: string) => `lambda$${name}`)
      // JPMS module / class-loader prefix: `java.base/java.lang.Thread.run`, `app//com.acme.Foo.bar`.
      .replace(/^[\w.@-]*\/\/?/, '')
  )
}

function canonicalDotnet(raw: string): string {
  return (
    raw
      // Async lambda: `<>c__DisplayClass5_0.<<Handle>b__0>d.MoveNext`
      .replace(/\.<>c(?:__DisplayClass[\d_]+)?\.<<([^<>]+)>b__[\w|]*>d(?:__\d+)?(?:`\d+)?\.MoveNext$/, '.$1.lambda')
      // Async local function: `<<Handle>g__Local|3_0>d.MoveNext`
      .replace(/\.<<([^<>]+)>g__([^|<>]+)\|[\d_]+>d(?:__\d+)?(?:`\d+)?\.MoveNext$/, '.$1.$2')
      // Async method state machine: `<Handle>d__3.MoveNext`
      .replace(/\.<([^<>]+)>d__\d+(?:`\d+)?\.MoveNext$/, '.$1')
      // Lambda in a closure class or the cached `<>c` class.
      .replace(/\.<>c(?:__DisplayClass[\d_]+)?\.<([^<>]+)>b__[\d_]+$/, '.$1.lambda')
      .replace(/\.<([^<>]+)>b__[\d_]+$/, '.$1.lambda')
      // Local function: `<Handle>g__Local|3_0`
      .replace(/\.<([^<>]+)>g__([^|<>]+)\|[\d_]+$/, '.$1.$2')
  )
}

function dottedPythonPath(path: string): string {
  return path
    .replace(/\.py[cwo]?$/, '')
    .replace(/\/__init__$/, '')
    .replace(/\//g, '.')
}

function pythonModule(path: string): { module: string; library: boolean } {
  const p = path.replace(/\\/g, '/')
  if (p.startsWith('<')) return { module: p, library: true }
  const site = /\/(?:site|dist)-packages\/(.+)$/.exec(p)
  if (site) return { module: dottedPythonPath(site[1]), library: true }
  const stdlib = /\/lib\/python\d+(?:\.\d+)?\/(.+)$/.exec(p)
  if (stdlib) return { module: dottedPythonPath(stdlib[1]), library: true }
  // Deploy roots differ between hosts (/app, /srv/releases/42); the last two segments do not.
  const segments = p.split('/').filter(Boolean)
  return { module: dottedPythonPath(segments.slice(-2).join('/')), library: false }
}

function baseName(file: string): string {
  const last = file.split(/[\\/]/).pop() ?? file
  return last.replace(/\.[cm]?[jt]sx?$/, '')
}

function parseNodeFrame(line: string): Frame | null {
  if (!NODE_FRAME_START.test(line)) return null
  const rest = line.replace(NODE_FRAME_START, '').trimEnd()
  // `fn (location)` or a bare location; the location is whatever sits in the last parentheses.
  const open = rest.endsWith(')') ? rest.lastIndexOf(' (') : -1
  const location = (open >= 0 ? rest.slice(open + 2, -1) : rest).trim()
  const rawFn = open >= 0 ? rest.slice(0, open) : ''
  const isPosition = /:\d+(?::\d+)?$/.test(location)
  const builtin = location === 'native' || /^index \d+$/.test(location)
  if (!isPosition && !builtin && location !== '<anonymous>') return null
  if (open < 0 && /\s/.test(location)) return null
  const file = location.replace(/:\d+(?::\d+)?$/, '').replace(/^file:\/\//, '')
  let fn = rawFn
    .replace(/^(?:async|new)\s+/, '')
    .replace(/ \[as [^\]]+\]$/, '')
    .trim()
  if (fn === '' || fn === '<anonymous>' || fn === 'Object.<anonymous>') fn = `${baseName(file)}.<anonymous>`
  return { fn, file, library: builtin || file.startsWith('node:') }
}

function parsePhpFrame(line: string): Frame | null {
  const m = PHP_FRAME.exec(line.trimEnd())
  if (!m) return null
  // PHP 8.4 names closures after their definition site, line included: `{closure:App\X::run():12}`.
  const call = m[1].replace(/\{closure:[^}]*\}/g, '{closure}')
  const paren = call.indexOf('(')
  const fn = paren > 0 ? call.slice(0, paren) : call
  // Global functions without a namespace or class are PHP builtins (array_map, call_user_func…).
  const builtin = !/[\\]|->|::/.test(fn)
  return { fn, file: null, library: builtin }
}

/** Parses one line as a frame of the given language; null when it is not one. */
export function parseFrameLine(line: string, language: StackLanguage): Frame | null {
  if (line.length > MAX_FRAME_LINE) return null
  switch (language) {
    case 'java': {
      const m = JAVA_FRAME.exec(line)
      return m ? { fn: canonicalJava(m[1]), file: null, library: false } : null
    }
    case 'dotnet': {
      const fn = matchDotnetFrame(line)
      return fn ? { fn: canonicalDotnet(fn), file: null, library: false } : null
    }
    case 'python': {
      const m = PYTHON_FRAME.exec(line)
      if (!m) return null
      const { module, library } = pythonModule(m[1])
      return { fn: `${module}.${m[2]?.trim() || '<module>'}`, file: m[1], library }
    }
    case 'php':
      return /^#\d+\s+\{main\}\s*$/.test(line) ? null : parsePhpFrame(line)
    case 'node':
      return parseNodeFrame(line)
  }
}

const LANGUAGE_SIGNALS: ReadonlyArray<[StackLanguage, RegExp]> = [
  ['python', /^[ \t]*File "[^"\n]*", line \d+|^Traceback \(most recent call last\):/gm],
  ['php', /^#\d+ (?:[^\n]*\(\d+\)|\[internal function\]): |^#\d+ \{main\}/gm],
  ['node', /^[ \t]*at (?:[^\n]*\()?[^\s()]+:\d+:\d+\)?[ \t]*$/gm],
  [
    'java',
    /^[ \t]*at \S+\((?:[\w$.-]+\.(?:java|kt|scala|groovy|clj)(?::\d+)?|Unknown Source|Native Method|<generated>)\)[ \t]*$|^Caused by: /gm,
  ],
  ['dotnet', /^[ \t]*at [^\s(]+\([^\n]*\) in [^\n]*:line \d+[ \t]*$|^[ \t]*--- End of |\s---> |^[ \t]*at [^\s(]+\(\)[ \t]*$/gm],
]

/** Only the start of a trace is scanned, and only lines short enough to be frames. */
const DETECTION_WINDOW = 16_384

export function detectStackLanguage(text: string, hint: StackLanguage | null = null): StackLanguage | null {
  const sample = text
    .slice(0, DETECTION_WINDOW)
    .split(/\r?\n/)
    .filter((line) => line.length <= MAX_FRAME_LINE)
    .join('\n')
  let best: StackLanguage | null = null
  let bestCount = 0
  for (const [language, pattern] of LANGUAGE_SIGNALS) {
    const count = sample.match(pattern)?.length ?? 0
    if (count > bestCount || (count === bestCount && count > 0 && language === hint)) {
      best = language
      bestCount = count
    }
  }
  return best ?? hint
}
