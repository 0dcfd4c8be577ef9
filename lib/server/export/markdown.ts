import 'server-only'

/**
 * Markdown for untrusted text (CommonMark / GitHub-flavoured): message content must show as text in a ticket,
 * never as markup, links, images or HTML, and never break out of the block it sits in.
 */

const longestRun = (text: string, char: string) => {
  let longest = 0
  let run = 0
  for (const c of text) {
    run = c === char ? run + 1 : 0
    if (run > longest) longest = run
  }
  return longest
}

/** A fenced code block whose fence is longer than any backtick run inside, so content cannot close it early. */
export function codeBlock(text: string, language = 'text'): string {
  const fence = '`'.repeat(Math.max(3, longestRun(text, '`') + 1))
  return `${fence}${language}\n${text.replace(/\r\n?/g, '\n').replace(/\n$/, '')}\n${fence}`
}

/** Inline code on one line; the delimiter outgrows any backtick run inside. */
export function inlineCode(text: string): string {
  const flat = text.replace(/[\r\n]+/g, ' ')
  if (flat === '') return '` `'
  const ticks = '`'.repeat(longestRun(flat, '`') + 1)
  const pad = flat.startsWith('`') || flat.endsWith('`') || (flat.startsWith(' ') && flat.endsWith(' ')) ? ' ' : ''
  return `${ticks}${pad}${flat}${pad}${ticks}`
}

/**
 * Plain text on one line, for the middle of a line (after a label, inside a heading or table cell): every character
 * that could start markup there is escaped, and bare URLs are broken up so trackers do not turn them into links
 * (GitHub's autolinks need "://" or "www."). Line-start syntax (lists, ---) cannot occur mid-line.
 */
export function escapeInline(text: string): string {
  return text
    .replace(/[\r\n]+/g, ' ')
    // Emphasis, code, links and images, HTML and entities, tables, strikethrough, headings.
    .replace(/[\\`*_[\]<>|~&#]/g, '\\$&')
    .replace(/:\/\//g, ':\\/\\/')
    .replace(/\b(www)\./gi, '$1\\.')
}

const safeUrl = (url: string) => url.replace(/[<>\s]/g, encodeURIComponent)

/** A link whose target is ours (a Lazarus URL); the label is escaped. */
export const link = (label: string, url: string) => `[${escapeInline(label)}](<${safeUrl(url)}>)`

/**
 * One of our URLs shown as itself: an autolink, so it reads as the address in plain text too (a label run through
 * escapeInline would read `https:\/\/…`).
 */
export const autolink = (url: string) => `<${safeUrl(url)}>`

export function truncate(text: string, max: number): { text: string; truncated: boolean } {
  return text.length > max ? { text: text.slice(0, max), truncated: true } : { text, truncated: false }
}

export function firstLines(text: string, lines: number): { text: string; truncated: boolean } {
  const all = text.split(/\r?\n/)
  return all.length > lines ? { text: all.slice(0, lines).join('\n'), truncated: true } : { text, truncated: false }
}

export const formatCount = (n: number) => new Intl.NumberFormat('en-US').format(n)
