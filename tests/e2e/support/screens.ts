import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { expect, type Locator, type Page } from '@playwright/test'

/**
 * Screenshots of the pages a spec changes, at the two widths the project checks (1440 and 1024 px), into
 * test-results/screens (or E2E_SHOTS), so a reviewer can look at them; every one is first checked to fit.
 */
export const SHOTS_DIR = process.env.E2E_SHOTS ?? 'test-results/screens'

/**
 * Screenshots are for people, and nobody looks at a CI run's: with CI set they are taken only when E2E_SHOTS asks
 * for them. What the tests assert around them (expectFits) runs either way. A full-page screenshot costs Chromium
 * 0.15–0.2 CPU s, and the suite takes about 170 (docs/ARCHITECTURE.md#tests).
 */
export const TAKING_SHOTS = !process.env.CI || process.env.E2E_SHOTS !== undefined

/**
 * Chromium has once left a full-page screenshot unanswered (the page itself still answered): a screenshot fails
 * after this long, naming itself, rather than holding the test to its timeout.
 */
const SHOT_TIMEOUT_MS = 30_000

/**
 * `name`.png under SHOTS_DIR (`name` may hold a folder): the page (the whole page with `fullPage`, else the window) or
 * one element. Nothing when screenshots are not being taken (TAKING_SHOTS).
 */
export async function capture(target: Page | Locator, name: string, { fullPage = false }: { fullPage?: boolean } = {}) {
  if (!TAKING_SHOTS) return
  const path = `${SHOTS_DIR}/${name}.png`
  mkdirSync(dirname(path), { recursive: true })
  if ('goto' in target) await target.screenshot({ path, fullPage, timeout: SHOT_TIMEOUT_MS })
  else await target.screenshot({ path, timeout: SHOT_TIMEOUT_MS })
}

export const SHOT_WIDTHS = [1440, 1024] as const

export type FitOptions = {
  /** CSS selector of texts that must be read whole (times with their zone, a job's outcome): none may be cut short. */
  neverCut?: string
}

/**
 * The page is no wider than its window, no dialog is wider than itself, and no `neverCut` text is cut short (a table
 * too wide for the window scrolls inside its box instead).
 */
export async function expectFits(page: Page, what: string, { neverCut }: FitOptions = {}) {
  const o = await page.evaluate((cutSelector) => {
    const width = document.documentElement.clientWidth
    const wide = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > width + 1)
      .slice(0, 5)
      .map((el) => `${el.tagName.toLowerCase()}.${String(el.getAttribute('class') ?? '').slice(0, 60)}`)
    const dialogs = [...document.querySelectorAll('[role="dialog"]')].map((d) => ({ scroll: d.scrollWidth, client: d.clientWidth }))
    const cut = cutSelector ? [...document.querySelectorAll(cutSelector)].filter((el) => el.scrollWidth > el.clientWidth).map((el) => el.textContent) : []
    return { scrollWidth: document.documentElement.scrollWidth, width, wide, dialogs, cut: [...new Set(cut)].slice(0, 5) }
  }, neverCut ?? null)
  expect(o.scrollWidth, `${what} at ${o.width} px: ${o.wide.join('; ')}`).toBeLessThanOrEqual(o.width)
  for (const d of o.dialogs) expect(d.scroll, `${what} at ${o.width} px: the dialog scrolls sideways`).toBeLessThanOrEqual(d.client)
  expect(o.cut, `${what} at ${o.width} px: texts cut short`).toEqual([])
}

export type ShotOptions = FitOptions & {
  /** Only the window, not the full page (a dialog is in the window; the page behind it does not matter). */
  dialog?: boolean
}

/** `name`-1440.png and `name`-1024.png (`name` may hold a folder), each checked with expectFits; back to 1440 after. */
export async function shots(page: Page, name: string, { dialog = false, neverCut }: ShotOptions = {}) {
  for (const width of SHOT_WIDTHS) {
    await page.setViewportSize({ width, height: 900 })
    await page.evaluate(() => window.scrollTo(0, 0))
    await expectFits(page, name, { neverCut })
    await capture(page, `${name}-${width}`, { fullPage: !dialog })
  }
  await page.setViewportSize({ width: 1440, height: 900 })
}

/** One full-page screenshot, `name`.png, at the window's current width, from the top (so a sticky header sits right). */
export async function shot(page: Page, name: string, { dialog = false }: Pick<ShotOptions, 'dialog'> = {}) {
  // Scrolled to the top whether or not the screenshot is taken, so a test runs on the same page in CI as locally.
  if (!dialog) await page.evaluate(() => window.scrollTo(0, 0))
  await capture(page, name, { fullPage: !dialog })
}
