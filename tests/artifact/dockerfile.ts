/**
 * The part of a Dockerfile the image test plays (tests/artifact/container-image.test.ts): per stage, its base, WORKDIR,
 * ENV, COPY, RUN, VOLUME, USER, HEALTHCHECK, ENTRYPOINT and CMD. Exec (JSON) form only for the last three: the image
 * must run Node with no shell in between.
 */
export type DockerCopy = { from?: string; sources: string[]; source: string; destination: string }
export type DockerStage = {
  from: string
  name?: string
  workdir: string
  env: Record<string, string>
  copies: DockerCopy[]
  runs: string[]
  volumes: string[]
  user?: string
  healthcheck: string[]
  entrypoint: string[]
  cmd: string[]
}

/** Instructions with `\` continuations joined and comments dropped. */
function instructions(text: string): { keyword: string; args: string }[] {
  const joined = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/)
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') }
    })
}

function execForm(args: string, keyword: string): string[] {
  const parsed: unknown = JSON.parse(args)
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string')) throw new Error(`${keyword} must be in exec (JSON array) form: ${args}`)
  return parsed
}

/** `KEY=value KEY2="value 2"` pairs. */
function envPairs(args: string): Record<string, string> {
  const pairs: Record<string, string> = {}
  for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|\S*)/g)) pairs[match[1]] = match[3] ?? match[2]
  return pairs
}

export function parseDockerfile(text: string): DockerStage[] {
  const stages: DockerStage[] = []
  for (const { keyword, args } of instructions(text)) {
    if (keyword === 'FROM') {
      const [from, as, name] = args.split(/\s+/)
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, workdir: '/', env: {}, copies: [], runs: [], volumes: [], healthcheck: [], entrypoint: [], cmd: [] })
      continue
    }
    const stage = stages.at(-1)
    if (!stage) throw new Error(`${keyword} before FROM`)
    switch (keyword) {
      case 'WORKDIR':
        stage.workdir = args
        break
      case 'ENV':
        Object.assign(stage.env, envPairs(args))
        break
      case 'COPY': {
        const parts = args.split(/\s+/)
        const from = parts.find((p) => p.startsWith('--from='))?.slice('--from='.length)
        const paths = parts.filter((p) => !p.startsWith('--'))
        const destination = paths.pop()!
        stage.copies.push({ from, sources: paths, source: paths[0], destination })
        break
      }
      case 'RUN':
        stage.runs.push(args)
        break
      case 'VOLUME':
        stage.volumes.push(...(args.startsWith('[') ? execForm(args, keyword) : args.split(/\s+/)))
        break
      case 'USER':
        stage.user = args
        break
      case 'HEALTHCHECK':
        stage.healthcheck = execForm(args.slice(args.indexOf('CMD') + 3).trim(), keyword)
        break
      case 'ENTRYPOINT':
        stage.entrypoint = execForm(args, keyword)
        break
      case 'CMD':
        stage.cmd = execForm(args, keyword)
        break
    }
  }
  return stages
}
