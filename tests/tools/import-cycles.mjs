#!/usr/bin/env node
/**
 * Import cycles among the project's own TypeScript modules.
 *
 *   node tests/tools/import-cycles.mjs [--folders] [--runtime-only] [--include-generated] [dir …]
 *
 * Reads every .ts/.tsx file under the given directories (default: lib app), follows their static imports and
 * re-exports (relative and `@/…` specifiers; packages are ignored), and reports each strongly connected component of
 * the import graph with one concrete cycle through it. Type-only imports count by default: they do not run, but a
 * module that needs another's types still depends on it, and the layering rules (docs/ARCHITECTURE.md) are about
 * dependencies. `--runtime-only` leaves them out, to see the cycles that change module evaluation order.
 * `import()` expressions are not edges: a dynamic import is the way to reach a module lazily. `lib/generated`
 * (Prisma's generated client) is skipped unless `--include-generated`.
 *
 * `--folders` checks the rooms instead of the files (docs/ARCHITECTURE.md: a domain `lib/server/<domain>`, an engine
 * `lib/server/engines/<name>`, a piece of infrastructure `lib/server/platform/<name>`, any other folder of `lib/` as a
 * whole, and each folder of `app/`): two rooms whose modules import each other, directly or through other rooms, are
 * a cycle even when no single module is part of one.
 *
 * Exits 1 when there is a cycle, 0 otherwise.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

const ROOT = path.resolve(import.meta.dirname, '../..')
const args = process.argv.slice(2)
const runtimeOnly = args.includes('--runtime-only')
const includeGenerated = args.includes('--include-generated')
const byFolder = args.includes('--folders')
const dirs = args.filter((a) => !a.startsWith('--'))
const roots = (dirs.length ? dirs : ['lib', 'app']).map((d) => path.resolve(ROOT, d))

const SKIPPED_DIRS = new Set(['node_modules', '.next', '.data'])
const GENERATED = path.join(ROOT, 'lib/generated')

function sourceFiles(dir) {
  const found = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) {
      if (SKIPPED_DIRS.has(entry.name) || (!includeGenerated && full === GENERATED)) continue
      found.push(...sourceFiles(full))
    } else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(full)
  }
  return found
}

const CANDIDATES = ['', '.ts', '.tsx', '/index.ts', '/index.tsx']

/** The project file a specifier names, or null for a package (or anything not found). */
function resolve(from, specifier) {
  let base
  if (specifier.startsWith('@/')) base = path.join(ROOT, specifier.slice(2))
  else if (specifier.startsWith('.')) base = path.resolve(path.dirname(from), specifier)
  else return null
  // `./x.js` may name `./x.ts` (TypeScript's ESM convention).
  const stems = /\.(c|m)?js$/.test(base) ? [base, base.replace(/\.(c|m)?js$/, '')] : [base]
  for (const stem of stems) {
    for (const suffix of CANDIDATES) {
      const file = stem + suffix
      if (existsSync(file) && statSync(file).isFile() && /\.tsx?$/.test(file)) return file
    }
  }
  return null
}

/** True when the declaration brings in types only (`import type`, `export type`, or every named binding `type`). */
function typeOnly(node) {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause
    if (!clause) return false // a side-effect import runs the module
    if (clause.isTypeOnly) return true
    if (clause.name) return false
    const bindings = clause.namedBindings
    return Boolean(bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly))
  }
  if (node.isTypeOnly) return true
  const clause = node.exportClause
  return Boolean(clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly))
}

/** file -> Map(target file -> { typeOnly }) */
function importGraph(files) {
  const graph = new Map()
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS)
    const edges = new Map()
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue
      if (!statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue
      const target = resolve(file, statement.moduleSpecifier.text)
      if (!target) continue
      const onlyTypes = typeOnly(statement)
      if (runtimeOnly && onlyTypes) continue
      // One runtime import of a module makes the edge a runtime edge.
      edges.set(target, { typeOnly: onlyTypes && (edges.get(target)?.typeOnly ?? true) })
    }
    graph.set(file, edges)
  }
  return graph
}

/** The room a file belongs to (see --folders). */
function roomOf(file) {
  const parts = path.relative(ROOT, file).split(path.sep).slice(0, -1)
  if (parts[0] !== 'lib') return parts.join('/')
  if (parts[1] !== 'server') return parts.slice(0, 2).join('/')
  return parts.slice(0, parts[2] === 'engines' || parts[2] === 'platform' ? 4 : 3).join('/')
}

/** The graph of rooms: an edge where any module of one imports any module of the other. */
function roomGraph(files) {
  const rooms = new Map()
  for (const [file, edges] of files) {
    const from = roomOf(file)
    const roomEdges = rooms.get(from) ?? new Map()
    rooms.set(from, roomEdges)
    for (const [target, edge] of edges) {
      const to = roomOf(target)
      if (to === from) continue
      const known = roomEdges.get(to)
      const via = `${path.relative(ROOT, file)} -> ${path.relative(ROOT, target)}`
      if (!known || (known.typeOnly && !edge.typeOnly)) roomEdges.set(to, { typeOnly: edge.typeOnly && (known?.typeOnly ?? true), via })
    }
  }
  return rooms
}

/** Tarjan's strongly connected components (iterative: the graph can be deep). */
function stronglyConnected(graph) {
  const index = new Map()
  const low = new Map()
  const onStack = new Set()
  const stack = []
  const components = []
  let next = 0
  for (const start of graph.keys()) {
    if (index.has(start)) continue
    const work = [{ node: start, targets: [...(graph.get(start)?.keys() ?? [])], at: 0 }]
    index.set(start, next)
    low.set(start, next++)
    stack.push(start)
    onStack.add(start)
    while (work.length) {
      const frame = work[work.length - 1]
      if (frame.at < frame.targets.length) {
        const target = frame.targets[frame.at++]
        if (!graph.has(target)) continue
        if (!index.has(target)) {
          index.set(target, next)
          low.set(target, next++)
          stack.push(target)
          onStack.add(target)
          work.push({ node: target, targets: [...graph.get(target).keys()], at: 0 })
        } else if (onStack.has(target)) low.set(frame.node, Math.min(low.get(frame.node), index.get(target)))
        continue
      }
      work.pop()
      if (work.length) {
        const parent = work[work.length - 1].node
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)))
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = []
        let member
        do {
          member = stack.pop()
          onStack.delete(member)
          component.push(member)
        } while (member !== frame.node)
        const selfLoop = graph.get(frame.node)?.has(frame.node)
        if (component.length > 1 || selfLoop) components.push(component)
      }
    }
  }
  return components
}

/** The shortest cycle through `start` inside one component (breadth first). */
function shortestCycle(graph, component, start) {
  const members = new Set(component)
  const previous = new Map([[start, null]])
  const queue = [start]
  while (queue.length) {
    const node = queue.shift()
    for (const target of graph.get(node).keys()) {
      if (!members.has(target)) continue
      if (target === start) {
        const cycle = [node]
        for (let at = previous.get(node); at !== null; at = previous.get(at)) cycle.unshift(at)
        return [...cycle, start]
      }
      if (!previous.has(target)) {
        previous.set(target, node)
        queue.push(target)
      }
    }
  }
  return [start]
}

const relative = (file) => (byFolder ? file : path.relative(ROOT, file))
const files = importGraph(roots.flatMap((root) => (existsSync(root) ? sourceFiles(root) : [])))
const graph = byFolder ? roomGraph(files) : files
const unit = byFolder ? 'folder' : 'module'
const components = stronglyConnected(graph)

const arrow = (from, to) => `${graph.get(from).get(to).typeOnly ? '-(type)->' : '->'} ${relative(to)}`

for (const component of components) {
  const sorted = [...component].sort()
  console.log(`cycle among ${component.length} ${unit}${component.length === 1 ? '' : 's'}: ${sorted.map(relative).join(', ')}`)
  // The shortest cycle through each member: together they show every edge that would have to go.
  const seen = new Set()
  for (const start of sorted) {
    const cycle = shortestCycle(graph, component, start)
    const first = cycle.slice(0, -1).reduce((a, b) => (a < b ? a : b))
    const at = cycle.indexOf(first)
    const rotated = [...cycle.slice(at, -1), ...cycle.slice(0, at), first]
    const key = rotated.join(' ')
    if (seen.has(key)) continue
    seen.add(key)
    console.log(`  ${relative(rotated[0])} ${rotated.slice(1).map((to, i) => arrow(rotated[i], to)).join(' ')}`)
    if (byFolder) for (const [i, to] of rotated.slice(1).entries()) console.log(`      ${graph.get(rotated[i]).get(to).via}`)
  }
}
console.log(components.length === 0 ? `no import cycles in ${graph.size} ${unit}s` : `${components.length} import cycle${components.length === 1 ? '' : 's'} in ${graph.size} ${unit}s`)
process.exitCode = components.length === 0 ? 0 : 1
