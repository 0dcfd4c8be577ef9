import 'server-only'
import { detectStackLanguage, matchDotnetFrame, parseFrameLine, type Frame, type StackLanguage } from './stack-frames'
import { BoundedCache } from './bounded-cache'

export type ExceptionHeader = { type: string; message: string | null }

export type StackAnalysis = {
  language: StackLanguage | null
  /** Exceptions named in the text, in the order they are written. */
  chain: ExceptionHeader[]
  /** The exception to group by (docs/framework-headers.md#root-exception-type). */
  root: ExceptionHeader | null
  /** The root exception's frames, throw site first. */
  frames: Frame[]
  /** The trace names only a wrapper whose cause was cut off, so the root type is unknown. */
  rootMissing: boolean
}

/** Wrappers that carry the real failure as their cause (docs/framework-headers.md#root-exception-type). */
export const WRAPPER_TYPES: readonly string[] = [
  'org.springframework.amqp.rabbit.support.ListenerExecutionFailedException',
  'org.springframework.amqp.rabbit.listener.exception.ListenerExecutionFailedException',
  'Symfony\\Component\\Messenger\\Exception\\HandlerFailedException',
  'System.AggregateException',
  'System.Reflection.TargetInvocationException',
  'java.lang.reflect.InvocationTargetException',
  'java.lang.reflect.UndeclaredThrowableException',
  'java.util.concurrent.CompletionException',
  'java.util.concurrent.ExecutionException',
]

export const isWrapperType = (type: string) => WRAPPER_TYPES.includes(type)

/** Traces are capped before parsing; the frames that matter are at the top of the root block. */
const MAX_TEXT = 256 * 1024
const MAX_LINES = 5000
const MAX_FRAMES = 100
/** Private-use placeholder for a known message while the trace is parsed (see maskMessage). */
const MASK = '\uE000'

const EMPTY: StackAnalysis = { language: null, chain: [], root: null, frames: [], rootMissing: false }

function collectFrames(lines: string[], language: StackLanguage): Frame[] {
  const frames: Frame[] = []
  for (const line of lines) {
    const frame = parseFrameLine(line, language)
    if (frame) frames.push(frame)
    if (frames.length >= MAX_FRAMES) break
  }
  return frames
}

function header(type: string | undefined, message: string | undefined): ExceptionHeader | null {
  if (!type) return null
  const trimmed = message?.trimEnd() ?? ''
  return { type, message: trimmed === '' ? null : trimmed }
}

const JAVA_HEADER = /^(?:Exception in thread "[^"\n]*" )?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?::\s?([\s\S]*))?$/
const JAVA_FRAME_LIKE = /^\s*at\s+\S+\(/

function analyseJava(lines: string[]): Omit<StackAnalysis, 'language'> {
  type Block = { header: string[]; frames: string[]; inFrames: boolean; closed: boolean }
  const blocks: Block[] = [{ header: [], frames: [], inFrames: false, closed: false }]
  for (const line of lines) {
    const current = blocks[blocks.length - 1]
    // Only unindented "Caused by:" belongs to the main chain; indented ones sit inside Suppressed blocks.
    if (line.startsWith('Caused by: ')) {
      blocks.push({ header: [line.slice('Caused by: '.length)], frames: [], inFrames: false, closed: false })
    } else if (/^\s+Suppressed: /.test(line) || /^\s+\.\.\. \d+ /.test(line)) {
      current.closed = true
    } else if (JAVA_FRAME_LIKE.test(line)) {
      current.inFrames = true
      if (!current.closed) current.frames.push(line)
    } else if (!current.inFrames) {
      current.header.push(line)
    }
  }
  const parsed = blocks.map((block) => {
    const m = JAVA_HEADER.exec(block.header.join('\n').trim())
    return { header: m ? header(m[1], m[2]) : null, frames: block.frames }
  })
  const chain = parsed.flatMap((p) => (p.header ? [p.header] : []))
  // The root is the deepest cause: the last "Caused by:" block.
  const rootBlock = [...parsed].reverse().find((p) => p.header) ?? parsed[parsed.length - 1]
  const root = rootBlock.header
  return {
    chain,
    root,
    frames: collectFrames(rootBlock.frames, 'java'),
    rootMissing: root !== null && isWrapperType(root.type),
  }
}

/**
 * `Type: message`. COM-derived exceptions (SocketException, NpgsqlException…) insert their HRESULT:
 * `Type (0x80004005): message`.
 */
const DOTNET_HEADER =
  /^\s*(?:\(Inner Exception #\d+\)\s*)?([A-Za-z_][\w`+]*(?:\.[A-Za-z_][\w`+]*)*)(?:\[[^\]\n]*\])?(?: \(0x[0-9A-Fa-f]{1,8}\))?(?::\s?([\s\S]*))?$/
/** A namespaced exception type somewhere on a line, for text that prefixes the ToString() (Rebus manual dead-lettering). */
const DOTNET_EMBEDDED_TYPE = /(?:^|:\s)((?:[A-Za-z_][\w`+]*\.)+[A-Za-z_][\w`+]*(?:Exception|Error|Fault))(?::\s?(.*))?$/

function analyseDotnet(lines: string[]): Omit<StackAnalysis, 'language'> {
  let i = 0
  const headerLines: string[] = []
  while (i < lines.length && matchDotnetFrame(lines[i]) === null && !/^\s*--- End of /.test(lines[i])) {
    headerLines.push(lines[i])
    i++
  }
  const headerText = headerLines.join('\n').trim()
  const segments = headerText === '' ? [] : headerText.split(/\s?---> /)
  const chain: ExceptionHeader[] = []
  segments.forEach((segment, index) => {
    const m = DOTNET_HEADER.exec(segment.trim())
    if (m) {
      const h = header(m[1], m[2])
      if (h) chain.push(h)
      return
    }
    if (index === 0) {
      const embedded = DOTNET_EMBEDDED_TYPE.exec(segment.split('\n')[0].slice(0, 1000))
      const h = embedded ? header(embedded[1], [embedded[2], ...segment.split('\n').slice(1)].join('\n')) : null
      if (h) chain.push(h)
    }
  })
  // ToString() lists the innermost exception's frames first, closed by "--- End of inner exception stack trace ---".
  const rootFrames: string[] = []
  for (const line of lines.slice(i)) {
    if (/^\s*--- End of inner exception stack trace ---/.test(line)) break
    rootFrames.push(line)
  }
  const root = chain.at(-1) ?? null
  return {
    chain,
    root,
    frames: collectFrames(rootFrames, 'dotnet'),
    rootMissing: root !== null && chain.length === 1 && isWrapperType(root.type),
  }
}

const PYTHON_CAUSE = /^The above exception was the direct cause of the following exception:\s*$/
const PYTHON_CONTEXT = /^During handling of the above exception, another exception occurred:\s*$/
const PYTHON_HEADER = /^([A-Za-z_][\w.]*)(?::\s?([\s\S]*))?$/

function analysePython(lines: string[]): Omit<StackAnalysis, 'language'> {
  type Block = { lines: string[]; linkedByCause: boolean }
  const blocks: Block[] = [{ lines: [], linkedByCause: false }]
  for (const line of lines) {
    if (PYTHON_CAUSE.test(line)) blocks.push({ lines: [], linkedByCause: true })
    else if (PYTHON_CONTEXT.test(line)) blocks.push({ lines: [], linkedByCause: false })
    else blocks[blocks.length - 1].lines.push(line)
  }
  const parsed = blocks.map((block) => {
    const frameLines: string[] = []
    const tail: string[] = []
    for (const line of block.lines) {
      if (tail.length === 0 && (/^Traceback \(most recent call last\):/.test(line) || /^(?:\s|$)/.test(line))) {
        frameLines.push(line)
      } else tail.push(line)
    }
    const m = PYTHON_HEADER.exec(tail.join('\n').trim())
    // Python prints the most recent call last; the throw site is the final frame.
    return { header: m ? header(m[1], m[2]) : null, frames: collectFrames(frameLines, 'python').reverse() }
  })
  // "direct cause" (raise … from e) points back at the real root; "during handling" starts a new failure.
  let index = parsed.length - 1
  while (index > 0 && blocks[index].linkedByCause) index--
  const rootBlock = parsed[index].header ? parsed[index] : ([...parsed].reverse().find((p) => p.header) ?? parsed[index])
  return {
    chain: parsed.flatMap((p) => (p.header ? [p.header] : [])),
    root: rootBlock.header,
    frames: rootBlock.frames,
    rootMissing: false,
  }
}

const PHP_HEADER = /^(?:PHP (?:Fatal error|Warning):\s+Uncaught\s+)?([A-Za-z_\\][\w\\]*)(?::\s?([\s\S]*))?$/
/** __toString() ends the first line with the throw site: "Type: message in /path/File.php:42". */
const PHP_THROW_SITE = / in \S+:\d+$/

function analysePhp(lines: string[]): Omit<StackAnalysis, 'language'> {
  // Exception::__toString() prints the innermost previous exception first, then "Next <outer>".
  const blocks: string[][] = [[]]
  for (const line of lines) {
    if (line.startsWith('Next ')) blocks.push([line.slice('Next '.length)])
    else blocks[blocks.length - 1].push(line)
  }
  const parsed = blocks.map((block) => {
    const headerLines: string[] = []
    for (const line of block) {
      if (/^#\d+ /.test(line) || /^Stack trace:/.test(line)) break
      headerLines.push(line)
    }
    const m = PHP_HEADER.exec(headerLines.join('\n').trim())
    return { header: m ? header(m[1], m[2]?.replace(PHP_THROW_SITE, '')) : null, frames: collectFrames(block, 'php') }
  })
  const root = parsed[0]
  return {
    chain: parsed.flatMap((p) => (p.header ? [p.header] : [])),
    root: root.header,
    frames: root.frames,
    rootMissing: false,
  }
}

const NODE_HEADER = /^([A-Za-z_$][\w$.]*)(?: \[[\w-]+\])?(?::\s?([\s\S]*))?$/

function analyseNode(lines: string[]): Omit<StackAnalysis, 'language'> {
  const headerLines: string[] = []
  let i = 0
  while (i < lines.length && !/^\s+at\s/.test(lines[i])) headerLines.push(lines[i++])
  const m = NODE_HEADER.exec(headerLines.join('\n').trim())
  const root = m ? header(m[1], m[2]) : null
  return { chain: root ? [root] : [], root, frames: collectFrames(lines.slice(i), 'node'), rootMissing: false }
}

const ANALYSERS: Record<StackLanguage, (lines: string[]) => Omit<StackAnalysis, 'language'>> = {
  java: analyseJava,
  dotnet: analyseDotnet,
  python: analysePython,
  php: analysePhp,
  node: analyseNode,
}

/**
 * Some traces repeat the exception message (NServiceBus' ToString(), Spring's printStackTrace()).
 * A message can contain anything, including lines that look like frames, so it is masked while the
 * trace is parsed and put back afterwards, as ServiceControl does.
 */
function maskMessage(text: string, message: string | null | undefined): { text: string; unmask: ((s: string) => string) | null } {
  const usable = message && message.length >= 16 && !message.includes(MASK) ? message : null
  // null: nothing was masked, and the cached analysis is returned as it is (it is never mutated).
  if (!usable || !text.includes(usable)) return { text, unmask: null }
  return { text: text.split(usable).join(MASK), unmask: (s) => s.split(MASK).join(usable) }
}

export type AnalyseOptions = {
  /** The language the framework implies; detection from the text wins when it is clear. */
  hint?: StackLanguage | null
  /** The exception message as reported separately, masked while parsing. */
  knownMessage?: string | null
}

type MaskedAnalysis = ReturnType<(typeof ANALYSERS)[StackLanguage]>
/** What one masked trace gave for one language hint: its language, and its analysis when it has one. */
type Analysed = { hint: StackLanguage | null; language: StackLanguage | null; result: MaskedAnalysis | null }

/**
 * A flood of one failure repeats the same trace with at most the message changing, and the message is masked
 * before detection and parsing, so both are remembered per masked trace (results are never mutated). The trace
 * itself is the key: a key built from the hint and the trace would copy kilobytes per message. A trace seen with
 * another hint (in practice, never: the hint comes from the framework that wrote it) is analysed again. Traces over
 * 16 KiB are analysed every time: 512 of them at the 256 KiB cap would hold too much memory.
 */
const analysisCache = new BoundedCache<Analysed>({ entries: 512, maxKeyLength: 16 * 1024 })

function analyseMasked(masked: string, hint: StackLanguage | null): Analysed {
  const language = detectStackLanguage(masked, hint)
  return { hint, language, result: language ? ANALYSERS[language](masked.split(/\r?\n/, MAX_LINES)) : null }
}

/** Finds the root exception and its frames in a stack trace of any supported language. Never throws. */
export function analyseStack(text: string | null | undefined, options: AnalyseOptions = {}): StackAnalysis {
  if (!text || text.trim() === '') return EMPTY
  const capped = text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text
  // The message is masked before detection too: its text says nothing about the language, and it varies.
  const { text: masked, unmask } = maskMessage(capped, options.knownMessage)
  const hint = options.hint ?? null
  const cached = analysisCache.get(masked, () => analyseMasked(masked, hint))
  const { language, result } = cached.hint === hint ? cached : analyseMasked(masked, hint)
  if (!language || !result) return EMPTY
  if (unmask === null) return { language, chain: result.chain, root: result.root, frames: result.frames, rootMissing: result.rootMissing }
  const restore = (h: ExceptionHeader): ExceptionHeader => ({
    type: unmask(h.type),
    message: h.message === null ? null : unmask(h.message),
  })
  return {
    language,
    chain: result.chain.map(restore),
    root: result.root ? restore(result.root) : null,
    frames: result.frames.map((f) => ({ ...f, fn: unmask(f.fn) })),
    rootMissing: result.rootMissing,
  }
}
