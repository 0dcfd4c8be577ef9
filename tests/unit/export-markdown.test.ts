import { describe, expect, it } from 'vitest'
import { autolink, codeBlock, escapeInline, inlineCode, link } from '@/lib/server/export/markdown'

describe('Markdown for untrusted text', () => {
  it('a code block outgrows any fence inside it', () => {
    const hostile = 'before\n```\n# not a heading\n````\n<script>alert(1)</script>'
    const block = codeBlock(hostile, 'json')
    const fence = block.split('\n')[0].replace('json', '')
    expect(fence).toBe('`````')
    // The block closes only at its last line: no line inside starts with the fence.
    const inner = block.split('\n').slice(1, -1)
    expect(inner.join('\n')).toBe(hostile)
    expect(inner.some((l) => l.startsWith(fence))).toBe(false)
    expect(block.endsWith(`\n${fence}`)).toBe(true)
  })

  it('inline code keeps backticks and line breaks inside', () => {
    expect(inlineCode('a`b')).toBe('``a`b``')
    expect(inlineCode('`x`')).toBe('`` `x` ``')
    expect(inlineCode('one\ntwo')).toBe('`one two`')
    expect(inlineCode('')).toBe('` `')
  })

  const escapes: { name: string; input: string; output: string }[] = [
    { name: 'emphasis', input: '*bold* _it_', output: '\\*bold\\* \\_it\\_' },
    { name: 'HTML', input: '<img src=x onerror=alert(1)>', output: '\\<img src=x onerror=alert(1)\\>' },
    { name: 'links', input: '[click](http://evil)', output: '\\[click\\](http:\\/\\/evil)' },
    { name: 'images', input: '![x](http://evil/x.png)', output: '!\\[x\\](http:\\/\\/evil/x.png)' },
    { name: 'bare URLs', input: 'see https://evil.example and www.evil.example', output: 'see https:\\/\\/evil.example and www\\.evil.example' },
    { name: 'headings and lists stay inline', input: '# title\n- item', output: '\\# title - item' },
    { name: 'dates and versions stay readable', input: '2026-12-01 v1.2.3-rc+4', output: '2026-12-01 v1.2.3-rc+4' },
    { name: 'tables', input: 'a | b', output: 'a \\| b' },
    { name: 'entities', input: '&lt;', output: '\\&lt;' },
  ]
  it.each(escapes)('escapes $name', ({ input, output }) => expect(escapeInline(input)).toBe(output))

  it('our own URLs show as themselves, unescaped', () => {
    expect(autolink('https://lazarus.corp/groups/12')).toBe('<https://lazarus.corp/groups/12>')
    expect(autolink('http://h/a b<c>')).toBe('<http://h/a%20b%3Cc%3E>')
  })

  it('links escape their label and wrap the target', () => {
    expect(link('#12 a*b', 'http://lazarus.test/groups/12')).toBe('[\\#12 a\\*b](<http://lazarus.test/groups/12>)')
    expect(link('x', 'http://h/a b<c>')).toBe('[x](<http://h/a%20b%3Cc%3E>)')
  })
})
