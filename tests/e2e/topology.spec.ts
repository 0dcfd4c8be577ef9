import { expect as baseExpect, type Page } from '@playwright/test'
import amqp from 'amqplib'
import { signInAs, test } from './support/fixtures'
import { shot as screen } from './support/screens'

/*
 * The topology pages in Chromium against the real broker: a trap built on RabbitMQ is found by Run now, marked on the
 * graph, its node's effective settings shown, and acknowledged with a reason; the three-tier builder dry-runs and
 * applies a topology to a fresh vhost, whose objects then exist; a viewer gets neither Run now nor Apply.
 */
const expect = baseExpect.configure({ timeout: 20_000 })
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const MANAGEMENT_URL = process.env.MANAGEMENT_URL ?? 'http://127.0.0.1:15672'
const RUN = Array.from({ length: 6 }, () => 'ghjkmnpqrstvwxyz'[Math.floor(Math.random() * 16)]).join('')

/** What the window shows (the graph fills it), into test-results/screens (support/screens.ts). */
const shot = (page: Page, name: string) => screen(page, name, { dialog: true })

test.describe.configure({ mode: 'serial' })

async function management(method: 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<Response> {
  return fetch(MANAGEMENT_URL + path, {
    method,
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

/** A fresh vhost (as tests/helpers/topology-vhost.ts makes them, whose imports only run on the server's conditions). */
async function createVhost(prefix: string): Promise<{ name: string; remove: () => Promise<void> }> {
  const name = `__test_${prefix}_${RUN}`
  expect((await management('PUT', `/api/vhosts/${encodeURIComponent(name)}`, {})).ok).toBe(true)
  expect((await management('PUT', `/api/permissions/${encodeURIComponent(name)}/guest`, { configure: '.*', write: '.*', read: '.*' })).ok).toBe(true)
  return { name, remove: async () => void (await management('DELETE', `/api/vhosts/${encodeURIComponent(name)}`)) }
}

for (const width of [1440, 1024]) {
  test(`topology at ${width} px: Run now finds a trap, marks its node, shows its settings, and it is acknowledged`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 })
    const trap = `e2e_t17ui.trap.${RUN}.${width}`
    const nowhere = `e2e_t17ui.nowhere.${RUN}.${width}`
    const connection = await amqp.connect(AMQP_URL)
    const channel = await connection.createChannel()
    // A queue whose dead-letter exchange does not exist: the broker drops its dead letters (finding 1).
    await channel.assertQueue(trap, { durable: false, arguments: { 'x-dead-letter-exchange': nowhere } })
    try {
      await page.goto('/topology')
      await expect(page.getByRole('heading', { name: 'Topology' })).toBeVisible()
      await page.getByRole('button', { name: 'Run now' }).click()
      await expect(page.getByRole('button', { name: 'Run now' })).toBeEnabled({ timeout: 60_000 })

      const finding = page.getByTestId('findings-list').locator('li[data-kind="dlx-missing"]').filter({ hasText: trap })
      await expect(finding).toHaveCount(1)
      await expect(finding).toHaveAttribute('data-severity', /error|warning/)
      // Marked on the graph with its severity (the graph above the cap shows nodes with findings and their neighbours).
      const node = page.locator(`[data-node-id="q:${trap}"]`)
      await expect(node).toBeVisible()
      await expect(node).toHaveAttribute('data-severity', (await finding.getAttribute('data-severity'))!)

      // The finding opens with why and fix; its queue selects and centres the node and opens its settings.
      await finding.getByRole('button', { expanded: false }).click()
      const detail = finding.getByTestId('finding-detail')
      await expect(detail).toContainText(nowhere)
      await detail.getByRole('button', { name: `queue ${trap}` }).click()
      const panel = page.getByTestId('node-panel')
      await expect(panel).toContainText(trap)
      const dlx = panel.getByTestId('node-settings').locator('tr[data-key="dead-letter-exchange"]')
      await expect(dlx).toContainText(nowhere)
      await expect(dlx).toContainText('argument')
      await shot(page, `topology-${width}`)
      await page.keyboard.press('Escape')
      await expect(panel).toHaveCount(0)

      // Acknowledged with a reason (operator+; audited): the finding says who and why.
      await detail.getByLabel('Reason for acknowledging').fill(`known trap of run ${RUN}`)
      await detail.getByRole('button', { name: 'Acknowledge' }).click()
      await expect(finding.getByTestId('finding-acknowledged')).toContainText(`known trap of run ${RUN}`)
      await expect(finding).toContainText('acknowledged')
    } finally {
      await channel.deleteQueue(trap).catch(() => undefined)
      await connection.close()
    }
  })
}

for (const width of [1440, 1024]) {
  test(`three-tier builder at ${width} px: dry run, then apply to a fresh vhost as admin`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 })
    const vhost = await createVhost(`t17ui${width}`)
    const base = `shop${width}`
    try {
      await page.goto('/topology/builder')
      const spec = page.getByRole('form', { name: 'Spec' })
      await spec.getByLabel('vhost').fill(vhost.name)
      await spec.getByLabel('Base name').fill(base)
      await spec.getByLabel(/Routing keys/).fill(`${base}.created`)
      await spec.getByRole('button', { name: 'Remove tier 3' }).click()
      await spec.getByLabel('Tier 2 delay').fill('2m')
      // The live preview follows the form.
      await expect(page.getByTestId('output-definitions')).toContainText(`"${base}.retry.2m"`)
      await page.getByRole('tab', { name: 'rabbitmqadmin' }).click()
      await expect(page.getByTestId('output-commands')).toContainText(`${base}.work`)
      await page.getByRole('tab', { name: 'Consumer rule' }).click()
      await expect(page.getByTestId('consumer-rule')).toContainText(`${base}.dead`)

      const apply = spec.getByRole('button', { name: 'Apply…' })
      await expect(apply).toBeDisabled()
      await spec.getByRole('button', { name: 'Dry run' }).click()
      const plan = page.getByRole('table', { name: 'Dry run' })
      await expect(plan.locator(`tr[data-object="${base}.work"]`)).toHaveAttribute('data-action', 'create')
      await expect(plan.locator('tr[data-action="conflict"]')).toHaveCount(0)
      await expect(plan.locator('tr[data-action="unchanged"]')).toHaveCount(0)
      await shot(page, `builder-${width}`)

      await expect(apply).toBeEnabled()
      await apply.click()
      const dialog = page.getByRole('dialog', { name: `Apply ${base} to ${vhost.name}?` })
      await dialog.getByRole('button', { name: 'Apply' }).click()
      await expect(page.getByTestId('apply-result')).toContainText('created')

      // On the broker: every queue and exchange the builder declared.
      const queues = (await (await management('GET', `/api/queues/${encodeURIComponent(vhost.name)}`)).json()) as { name: string; arguments: Record<string, unknown> }[]
      expect(queues.map((q) => q.name).sort()).toEqual([`${base}.dlq`, `${base}.retry.2m`, `${base}.retry.30s`, `${base}.work`])
      expect(queues.find((q) => q.name === `${base}.retry.2m`)?.arguments['x-message-ttl']).toBe(120_000)
      const exchanges = (await (await management('GET', `/api/exchanges/${encodeURIComponent(vhost.name)}`)).json()) as { name: string }[]
      expect(exchanges.map((e) => e.name)).toEqual(expect.arrayContaining([base, `${base}.retry`, `${base}.return`, `${base}.dead`]))

      // A second dry run finds everything there.
      await spec.getByRole('button', { name: 'Dry run' }).click()
      await expect(plan.locator(`tr[data-object="${base}.work"]`)).toHaveAttribute('data-action', 'unchanged')
      await expect(plan.locator('tr[data-action="create"]')).toHaveCount(0)
      await expect(apply).toBeDisabled()
    } finally {
      await vhost.remove()
    }
  })
}

test('a viewer sees the topology and dry-runs the builder, but gets no Run now and no Apply', async ({ page, request }) => {
  await signInAs(page, request, `e2e-topology-viewer-${RUN.toLowerCase()}@lazarus.test`, { role: 'viewer' })
  await page.goto('/topology')
  await expect(page.getByRole('heading', { name: 'Topology' })).toBeVisible()
  await expect(page.getByTestId('topology-checked')).toBeVisible()
  await expect(page.getByRole('button', { name: 'Run now' })).toHaveCount(0)
  await page.goto('/topology/builder')
  const spec = page.getByRole('form', { name: 'Spec' })
  await spec.getByLabel('Base name').fill(`viewer${RUN}`)
  await spec.getByRole('button', { name: 'Dry run' }).click()
  await expect(page.getByRole('table', { name: 'Dry run' }).locator('tr[data-action="create"]').first()).toBeVisible()
  await expect(page.getByRole('button', { name: /Apply/ })).toHaveCount(0)
  // The browser's own session, asking anyway: refused.
  const origin = new URL(page.url()).origin
  const run = await page.request.post('/api/topology/runs', { data: {}, headers: { origin } })
  expect(run.status()).toBe(403)
})
