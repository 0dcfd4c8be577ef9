import { expect as baseExpect, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { pollJson } from './support/api-json'
import { test } from './support/fixtures'
import { shots as screens, type ShotOptions } from './support/screens'
import { sourceQueue } from './support/slots'

/*
 * The groups view as on-call uses it (issue 16): dead / replayed / resolved per group with "needs attention" as the
 * default view, the per-minute sparkline of the last hour beside the 24-hour one, the top frame that tells apart
 * groups with the same title, whole rows as links (mouse and keyboard), and the arrivals chart's zoom filtering the
 * messages below it. Everything is found through a per-run marker.
 */

const expect = baseExpect.configure({ timeout: 15_000 })

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const DLQ = sourceQueue()
const RUN = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
const TYPE = `com.acme.e2e.Timeout${RUN}Exception`
const HOUR_S = 3600

type Frame = 'orders.OrderClient.submit' | 'billing.InvoiceClient.send' | 'stock.StockClient.reserve'
const FRAMES: Frame[] = ['orders.OrderClient.submit', 'billing.InvoiceClient.send', 'stock.StockClient.reserve']

/** The same error text from three call sites: three groups with one title (defect 10). */
function letter(frame: Frame, n: number, agoSeconds: number) {
  const file = frame.split('.')[1]
  return {
    messageId: `${RUN}-${frame}-${n}`,
    body: { n },
    headers: {
      'x-error-type': TYPE,
      'x-error-message': 'The operation has timed out after 00:00:30',
      'x-error-stack': `${TYPE}: The operation has timed out after 00:00:30\n    at com.acme.${frame}(${file}.java:${40 + n})\n    at com.acme.worker.Loop.run(Loop.java:12)`,
      'x-failure-kind': 'transient',
      'x-service': frame.split('.')[0],
      'x-death': [{ queue: `${frame.split('.')[0]}.work`, reason: 'rejected', count: 1, exchange: 'work', 'routing-keys': ['work'], time: { '!': 'timestamp', value: Math.floor(Date.now() / 1000) - agoSeconds } }],
    },
  }
}

// Orders: three letters five hours ago and two now (the chart's zoom tells them apart); billing two; stock one, resolved.
const LETTERS = [
  ...[0, 1, 2].map((n) => letter(FRAMES[0], n, 5 * HOUR_S)),
  ...[3, 4].map((n) => letter(FRAMES[0], n, 30)),
  ...[0, 1].map((n) => letter(FRAMES[1], n, 30)),
  letter(FRAMES[2], 0, 30),
]

type Group = { id: string; title: string; topFrames: string[]; deadCount: number }

const groupsTable = (page: Page) => page.getByRole('table', { name: 'Error groups' })
const groupRow = (page: Page, frame: Frame) => groupsTable(page).locator('tbody tr', { hasText: frame })
const messageRows = (page: Page) => page.getByRole('table', { name: 'Messages' }).locator('tbody tr[data-message-id]')

test.describe.configure({ mode: 'serial' })

const groupIds: Partial<Record<Frame, string>> = {}

/** Screenshots at 1440 and 1024 px into test-results/screens/groups, each checked to fit (support/screens.ts). */
const shots = (page: Page, name: string, options: ShotOptions = {}) => screens(page, `groups/${name}`, options)

test.beforeAll(async ({ request }) => {
  test.setTimeout(120_000)
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  for (const l of LETTERS) {
    channel.sendToQueue(DLQ, Buffer.from(JSON.stringify(l.body)), { contentType: 'application/json', messageId: l.messageId, headers: l.headers, persistent: true })
  }
  await channel.waitForConfirms()
  await connection.close()
  await expect
    .poll(async () => (await pollJson(request, `/api/messages?q=${RUN}&limit=100`))?.messages?.length, { timeout: 30_000 })
    .toBe(LETTERS.length)
  const { groups } = (await (await request.get('/api/groups?view=all&limit=500')).json()) as { groups: Group[] }
  for (const frame of FRAMES) {
    const group = groups.find((g) => g.title.includes(`Timeout${RUN}Exception`) && g.topFrames[0] === `com.acme.${frame}`)
    expect(group, `group of ${frame}`).toBeTruthy()
    groupIds[frame] = group!.id
  }
  const resolved = await request.post('/api/messages/resolve', { data: { selection: { groupId: groupIds[FRAMES[2]] }, reason: 'e2e: handled' } })
  expect(resolved.status(), await resolved.text()).toBe(200)
})

test('the list shows dead, replayed and resolved, needs attention by default, and tells same-titled groups apart', async ({ page }) => {
  await page.goto(`/?q=${RUN}`)
  await expect(page.getByRole('tab', { name: 'Needs attention' })).toHaveAttribute('aria-selected', 'true')
  await expect(groupsTable(page).locator('tbody tr')).toHaveCount(2)
  // The same title, told apart by the top frame under it.
  const title = (frame: Frame) => groupRow(page, frame).getByRole('link').first()
  await expect(title(FRAMES[0])).toContainText(`Timeout${RUN}Exception: The operation has timed out after`)
  expect(await title(FRAMES[0]).textContent()).toBe(await title(FRAMES[1]).textContent())
  for (const frame of FRAMES.slice(0, 2)) await expect(groupRow(page, frame).getByTestId('group-origin')).toContainText(`at com.acme.${frame}`)
  await expect(groupRow(page, FRAMES[0]).getByTestId('dead-count')).toHaveText('5')
  await expect(groupRow(page, FRAMES[1]).getByTestId('dead-count')).toHaveText('2')
  // Both sparklines: the last hour per minute and the last 24 hours per hour.
  await expect(groupRow(page, FRAMES[0]).getByRole('img', { name: /last hour, per minute/ })).toHaveAttribute('aria-label', /^2 arrivals/)
  await expect(groupRow(page, FRAMES[0]).getByRole('img', { name: /last 24 hours/ })).toHaveAttribute('aria-label', /^5 arrivals/)

  // Sorted by dead count.
  await page.getByRole('button', { name: 'Dead', exact: true }).click()
  await expect(page).toHaveURL(/sort=dead/)
  await expect(groupsTable(page).locator('tbody tr').first()).toContainText(FRAMES[0])
  await shots(page, 'groups-attention')

  // The resolved group dropped out; the Handled view brings it back with its counts.
  await page.getByRole('tab', { name: 'Handled' }).click()
  await expect(page).toHaveURL(/view=handled/)
  await expect(groupsTable(page).locator('tbody tr')).toHaveCount(1)
  await expect(groupRow(page, FRAMES[2]).getByTestId('dead-count')).toHaveText('0')
  await expect(groupRow(page, FRAMES[2]).getByTestId('resolved-count')).toHaveText('1')
  await expect(groupRow(page, FRAMES[2]).getByTestId('replayed-count')).toHaveText('0')
  await page.getByRole('tab', { name: 'All', exact: true }).click()
  await expect(groupsTable(page).locator('tbody tr')).toHaveCount(3)
})

test('whole rows open their group or message: click anywhere, or Enter on the focused row', async ({ page }) => {
  await page.goto(`/?q=${RUN}`)
  // A click on a cell that holds no link (the dead count) opens the group.
  await groupRow(page, FRAMES[1]).getByTestId('dead-count').click()
  await expect(page).toHaveURL(new RegExp(`/groups/${groupIds[FRAMES[1]]}$`))
  await page.goBack()
  // Keyboard: Tab reaches the row itself; Enter opens it.
  await groupRow(page, FRAMES[0]).focus()
  await expect(groupRow(page, FRAMES[0])).toHaveAttribute('data-cursor', 'true')
  await page.keyboard.press('Enter')
  await expect(page).toHaveURL(new RegExp(`/groups/${groupIds[FRAMES[0]]}$`))

  // The group page shows the counts and the frame too.
  await expect(page.getByRole('region', { name: 'Numbers' })).toContainText('Dead5')
  await expect(page.getByTestId('group-origin')).toContainText(`at com.acme.${FRAMES[0]}`)
  await expect(messageRows(page)).toHaveCount(5)
  // Its checkbox selects without opening; any other cell opens the message.
  const first = messageRows(page).first()
  await first.getByRole('checkbox').click()
  await expect(first.getByRole('checkbox')).toBeChecked()
  await expect(page).toHaveURL(/\/groups\/\d+$/)
  const id = await first.getAttribute('data-message-id')
  await first.locator('td').nth(4).click()
  await expect(page).toHaveURL(new RegExp(`/messages/${id}$`))
})

test('dragging across the arrivals chart zooms in and shows only those messages', async ({ page, request }) => {
  // 24 hourly buckets, the current one last: the three older letters sit in the bucket about five hours back.
  const { arrivals } = (await (await request.get(`/api/groups/${groupIds[FRAMES[0]]}`)).json()) as { arrivals: { count: number }[] }
  const older = arrivals.findIndex((a) => a.count === 3)
  expect(older).toBeGreaterThanOrEqual(0)
  await page.goto(`/groups/${groupIds[FRAMES[0]]}`)
  await expect(messageRows(page)).toHaveCount(5)
  const over = page.getByTestId('arrivals-chart').locator('.u-over')
  await expect(over).toBeVisible()
  const box = (await over.boundingBox())!
  const x = (bucket: number) => box.x + (bucket / arrivals.length) * box.width
  // The pointer shows the bucket's count (uPlot's cursor snaps to the nearest bucket start).
  await page.mouse.move(x(older + 0.1), box.y + box.height / 2)
  await expect(page.getByTestId('chart-hover')).toContainText('· 3')
  await page.mouse.move(x(older + 0.15), box.y + box.height / 2)
  await page.mouse.down()
  await page.mouse.move(x(older + 0.85), box.y + box.height / 2, { steps: 5 })
  await page.mouse.up()
  await expect(page).toHaveURL(/from=.*&to=/)
  await expect(page.getByTestId('chart-zoom')).toBeVisible()
  await expect(messageRows(page)).toHaveCount(3)
  await shots(page, 'group-zoomed')

  await page.getByRole('button', { name: 'Reset zoom' }).click()
  await expect(page).not.toHaveURL(/from=/)
  await expect(messageRows(page)).toHaveCount(5)
})

test('at 1024 px the error title shows at least 60 characters, on up to two lines, and the 24-hour sparkline gives way', async ({ page, request }) => {
  // A title of its own (its own marker, so the counts above stay theirs), long enough to be cut somewhere.
  const marker = Array.from({ length: 8 }, () => 'GHJKMNPQRSTVWXYZ'[Math.floor(Math.random() * 16)]).join('')
  const message = `index out of range: cursor ${marker} of partition 7 moved past the end of the compacted segment log at offset 4096 while rebalancing`
  const connection = await amqp.connect(AMQP_URL)
  const channel = await connection.createConfirmChannel()
  await channel.assertQueue(DLQ, { durable: true })
  channel.sendToQueue(DLQ, Buffer.from('{}'), { contentType: 'application/json', messageId: `${marker}-long`, headers: { 'x-error-type': 'RangeError', 'x-error-message': message }, persistent: true })
  await channel.waitForConfirms()
  await connection.close()
  await expect
    .poll(async () => (await pollJson<{ groups: Group[] }>(request, '/api/groups?view=all&limit=500'))?.groups.filter((g) => g.title.includes(marker)).length, { timeout: 30_000 })
    .toBe(1)

  await page.goto(`/?view=all&q=${marker}`)
  const title = groupsTable(page).getByTestId('group-title')
  // The group's title is the normalised error (numbers become <int>), cut by the server well past two lines.
  await expect(title).toContainText(`RangeError: index out of range: cursor ${marker} of partition <int> moved past the end`)
  /** How many leading characters of the title are on screen: inside the link's box, before any ellipsis of a cut line. */
  const shownCharacters = () =>
    title.evaluate((link) => {
      const text = link.firstChild as Text
      const box = link.getBoundingClientRect()
      const range = document.createRange()
      let inside = 0
      for (; inside < text.length; inside++) {
        range.setStart(text, inside)
        range.setEnd(text, inside + 1)
        const rect = range.getBoundingClientRect()
        if (rect.bottom > box.bottom + 0.5 || rect.right > box.right + 0.5) break
      }
      // A clamped title ends its last line with an ellipsis, which may be drawn over (at most) two of the characters
      // laid out before it in the monospaced font.
      const cut = link.scrollHeight > link.clientHeight + 0.5
      return { shown: inside - (cut ? 2 : 0), cut, lines: Math.round(box.height / parseFloat(getComputedStyle(link).lineHeight)) }
    })
  await page.setViewportSize({ width: 1024, height: 900 })
  const narrow = await shownCharacters()
  expect(narrow.cut, 'the title is longer than two lines at 1024 px').toBe(true)
  expect(narrow.shown, `at 1024 px: ${JSON.stringify(narrow)}`).toBeGreaterThanOrEqual(60)
  expect(narrow.lines).toBeLessThanOrEqual(2)
  await expect(groupsTable(page).getByRole('img', { name: /last hour, per minute/ })).toBeVisible()
  await expect(groupsTable(page).getByRole('img', { name: /last 24 hours/ })).toBeHidden()
  await page.setViewportSize({ width: 1440, height: 900 })
  expect((await shownCharacters()).shown).toBeGreaterThanOrEqual(60)
  await expect(groupsTable(page).getByRole('img', { name: /last 24 hours/ })).toBeVisible()
  await shots(page, 'groups-long-title')
})

