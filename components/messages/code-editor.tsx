'use client'

import { json, jsonParseLinter } from '@codemirror/lang-json'
import { linter, lintGutter } from '@codemirror/lint'
import { EditorState } from '@codemirror/state'
import { EditorView } from '@codemirror/view'
import { basicSetup } from 'codemirror'
import { useEffect, useRef } from 'react'

type CodeEditorProps = {
  /** The text the editor starts with; later changes of the prop replace the document (Format). */
  value: string
  onChange: (value: string) => void
  language: 'json' | 'text'
  label: string
}

const theme = EditorView.theme({
  '&': { fontSize: '12px', border: '1px solid rgb(212 212 216)', borderRadius: '6px', backgroundColor: 'white' },
  '&.cm-focused': { outline: '2px solid color-mix(in srgb, var(--color-brand, #2563eb) 25%, transparent)' },
  '.cm-scroller': { fontFamily: 'var(--font-mono, ui-monospace, monospace)', maxHeight: '28rem', minHeight: '12rem' },
  '.cm-gutters': { backgroundColor: 'rgb(250 250 250)', borderRight: '1px solid rgb(228 228 231)' },
})

/**
 * CodeMirror 6 for a message body: bundled with the app (nothing loaded from elsewhere, so it runs under the CSP of
 * docs/security.md), JSON syntax and parse errors inline for JSON bodies. The text is the body's, untrusted: CodeMirror
 * renders it as text, never as HTML.
 */
export function CodeEditor({ value, onChange, language, label }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView | null>(null)
  const latest = useRef(onChange)
  useEffect(() => {
    latest.current = onChange
  })

  useEffect(() => {
    const extensions = [
      basicSetup,
      theme,
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({ 'aria-label': label, 'data-testid': 'body-editor' }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) latest.current(update.state.doc.toString())
      }),
      ...(language === 'json' ? [json(), linter(jsonParseLinter(), { delay: 300 }), lintGutter()] : []),
    ]
    view.current = new EditorView({ parent: host.current!, state: EditorState.create({ doc: value, extensions }) })
    return () => {
      view.current?.destroy()
      view.current = null
    }
    // The document is set once here and replaced below; the language and label never change for one editor.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [language, label])

  useEffect(() => {
    const current = view.current
    if (current && current.state.doc.toString() !== value) current.dispatch({ changes: { from: 0, to: current.state.doc.length, insert: value } })
  }, [value])

  return <div ref={host} className="min-w-0" />
}
