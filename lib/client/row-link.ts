'use client'

import type { FocusEvent, MouseEvent } from 'react'
import type { CursorStore } from './use-row-cursor'

/** What a click inside a row does itself; `data-row-link-ignore` marks a cell that is not part of the link (a checkbox's). */
const OWN_CLICK = 'a, button, input, select, textarea, label, summary, [data-row-link-ignore]'

type Navigate = { push(href: string): void }

function ownClick(event: MouseEvent<HTMLElement>): boolean {
  const target = event.target
  return target instanceof Element && target.closest(OWN_CLICK) !== null && event.currentTarget.contains(target)
}

/**
 * A table row that opens `href` wherever it is clicked (defect 11): links, buttons and checkboxes inside it keep their
 * own click, a drag that selected text opens nothing, and a click with Ctrl, ⌘ or the middle button opens a new tab
 * like a link. The row takes the keyboard focus (Tab) and focusing it moves the row cursor there, so Enter opens it
 * through the table's own keys (useRowCursor), which also keep j/k/x.
 */
export function rowLinkProps({ href, index, cursorStore, router }: { href: string; index: number; cursorStore: CursorStore; router: Navigate }) {
  const open = (event: MouseEvent<HTMLElement>, newTab: boolean) => {
    if (event.defaultPrevented || ownClick(event)) return
    if (window.getSelection()?.toString()) return
    if (newTab) window.open(href, '_blank', 'noopener')
    else router.push(href)
  }
  return {
    tabIndex: 0,
    'data-href': href,
    onClick: (event: MouseEvent<HTMLElement>) => event.button === 0 && open(event, event.metaKey || event.ctrlKey),
    onAuxClick: (event: MouseEvent<HTMLElement>) => event.button === 1 && open(event, true),
    onFocus: (event: FocusEvent<HTMLElement>) => {
      if (event.target === event.currentTarget) cursorStore.set(index)
    },
    onMouseDown: () => cursorStore.set(index),
  }
}
