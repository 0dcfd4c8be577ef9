import { describe, expect, it } from 'vitest'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parseAllDocuments } from 'yaml'
import { ENVIRONMENT_VARIABLES, SECRET_VARIABLES } from '@/lib/server/platform/config'
import { PROCESS_ENTRIES } from '@/lib/build/bundle-processes.mjs'
import { parseDockerfile } from '../artifact/dockerfile'

/**
 * deploy/kubernetes validated offline (docs/operations.md#kubernetes): no cluster answers here, and `kubectl` needs an
 * API server even for --dry-run=client. Each object is checked against the Kubernetes schemas (kubernetes-models),
 * then against Lazarus: every variable it sets is one the configuration knows, secrets come from files of a mounted
 * Secret, probes ask a route that exists on the port the image listens on, and the network policies select the pods.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const DIR = path.join(ROOT, 'deploy/kubernetes')

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string }; spec?: Record<string, unknown>; data?: Record<string, string> }
type Container = {
  name: string
  image: string
  args?: string[]
  env?: { name: string; value?: string; valueFrom?: unknown }[]
  envFrom?: { configMapRef?: { name: string } }[]
  ports?: { name?: string; containerPort: number }[]
  volumeMounts?: { name: string; mountPath: string }[]
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> }
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean }
  startupProbe?: Probe
  readinessProbe?: Probe
  livenessProbe?: Probe
}
type Probe = { httpGet?: { path: string; port: string | number } }
type PodSpec = { containers: Container[]; volumes?: { name: string; secret?: { secretName: string } }[]; securityContext?: { runAsNonRoot?: boolean } }
type PodTemplate = { metadata: { labels: Record<string, string> }; spec: PodSpec }

const kustomization = parseAllDocuments(readFileSync(path.join(DIR, 'kustomization.yaml'), 'utf8'))[0].toJS() as { resources: string[] }
const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
const objects: K8sObject[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(path.join(DIR, file), 'utf8')).map((doc) => {
    if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`)
    return doc.toJS() as K8sObject
  }),
)
const templates = objects.flatMap((o): { owner: string; template: PodTemplate }[] => {
  const template = (o.spec as { template?: PodTemplate } | undefined)?.template
  return template ? [{ owner: `${o.kind}/${o.metadata.name}`, template }] : []
})
const containers = templates.flatMap(({ owner, template }) => template.spec.containers.map((container) => ({ owner, container, spec: template.spec })))
const configMapKeys = objects.filter((o) => o.kind === 'ConfigMap').flatMap((o) => Object.keys(o.data ?? {}))
const runtime = parseDockerfile(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')).at(-1)!

describe('deploy/kubernetes', () => {
  it('lists every manifest in its kustomization, and only those', () => {
    expect([...kustomization.resources].sort()).toEqual([...files].sort())
  })

  it('holds valid Kubernetes objects, by the schemas of their kinds', async () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Deployment', 'Job', 'NetworkPolicy', 'NetworkPolicy', 'NetworkPolicy', 'PodDisruptionBudget', 'Service'])
    for (const object of objects) {
      const model = (await import(`kubernetes-models/${object.apiVersion}/${object.kind}`)) as Record<string, new (value: unknown) => { validate(): void }>
      expect(() => new model[object.kind](object).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow()
    }
    // What the schemas catch: a wrong type, a missing required field. (Not an unknown field: Kubernetes' published
    // schemas allow extra properties, docs/operations.md#kubernetes.)
    const { Deployment } = await import('kubernetes-models/apps/v1/Deployment')
    const deployment = objects.find((o) => o.kind === 'Deployment')!
    const wrongType = structuredClone(deployment) as unknown as { spec: { replicas: unknown } }
    wrongType.spec.replicas = 'two'
    expect(() => new Deployment(wrongType as never).validate()).toThrow()
    const noName = structuredClone(deployment) as unknown as { spec: { template: PodTemplate } }
    delete (noName.spec.template.spec.containers[0] as Partial<Container>).name
    expect(() => new Deployment(noName as never).validate()).toThrow()
  })

  it('sets only variables Lazarus reads, and never a secret inline', () => {
    for (const key of configMapKeys) expect(ENVIRONMENT_VARIABLES, `ConfigMap key ${key}`).toContain(key)
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false)
    for (const { owner, container, spec } of containers) {
      for (const variable of container.env ?? []) {
        expect(ENVIRONMENT_VARIABLES, `${owner} sets ${variable.name}`).toContain(variable.name)
        expect(SECRET_VARIABLES as readonly string[], `${owner} inlines the secret ${variable.name}`).not.toContain(variable.name)
        if (!variable.name.endsWith('_FILE')) continue
        // A secret's file lies in a mounted volume of the Secret, under the key its variable names.
        const mount = container.volumeMounts?.find((m) => variable.value?.startsWith(`${m.mountPath}/`))
        expect(mount, `${owner}: ${variable.name} points outside its mounts`).toBeDefined()
        expect(spec.volumes?.find((v) => v.name === mount!.name)?.secret?.secretName).toBe('lazarus')
        expect(path.basename(variable.value!)).toBe(variable.name.replace(/_FILE$/, ''))
      }
    }
  })

  it('runs the image’s commands, as a non-root user with a read-only root file system and set resources', () => {
    const commands = Object.keys(PROCESS_ENTRIES).map((name) => `dist/${name}.mjs`)
    for (const { owner, container, spec } of containers) {
      expect(container.image, owner).toBe('lazarus')
      for (const arg of container.args ?? []) expect(commands, `${owner} runs ${arg}`).toContain(arg)
      expect(spec.securityContext?.runAsNonRoot, owner).toBe(true)
      expect(container.securityContext, owner).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false })
      expect(container.resources?.requests, owner).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) })
      expect(container.resources?.limits?.memory, owner).toBeDefined()
    }
  })

  it('probes the health route on the port the image listens on', () => {
    const web = containers.filter(({ container }) => container.ports?.length)
    expect(web.map(({ owner }) => owner)).toEqual(['Deployment/lazarus-web'])
    for (const { container } of web) {
      expect(container.ports).toEqual([{ name: 'http', containerPort: Number(runtime.env.PORT) }])
      const probes = [container.startupProbe, container.readinessProbe, container.livenessProbe]
      for (const probe of probes) {
        expect(probe?.httpGet?.port).toBe('http')
        const route = path.join(ROOT, 'app', probe!.httpGet!.path, 'route.ts')
        expect(existsSync(route), probe!.httpGet!.path).toBe(true)
        expect(readFileSync(route, 'utf8')).toMatch(/export const GET = route\(\{ permission: 'public' \}/)
      }
    }
    const service = objects.find((o) => o.kind === 'Service') as unknown as { spec: { selector: Record<string, string>; ports: { targetPort: string }[] } }
    expect(service.spec.ports.map((p) => p.targetPort)).toEqual(['http'])
    expect(templates.find((t) => t.owner === 'Deployment/lazarus-web')!.template.metadata.labels).toMatchObject(service.spec.selector)
  })

  it('selects every workload with a network policy and a disruption budget keeps one web replica up', () => {
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy') as unknown as { spec: { podSelector: { matchLabels: Record<string, string> } } }[]
    for (const { owner, template } of templates) {
      const selected = policies.filter((p) => Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => template.metadata.labels[k] === v))
      expect(selected.length, `${owner} has no network policy`).toBe(1)
    }
    const budget = objects.find((o) => o.kind === 'PodDisruptionBudget') as unknown as { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } }
    expect(budget.spec.minAvailable).toBe(1)
    expect(templates.find((t) => t.owner === 'Deployment/lazarus-web')!.template.metadata.labels).toMatchObject(budget.spec.selector.matchLabels)
  })
})
