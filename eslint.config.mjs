// Lint: Next's rules (React, hooks, accessibility, Core Web Vitals), typescript-eslint's recommended rules, and the
// import boundaries that keep the rooms of docs/ARCHITECTURE.md#where-code-lives apart. `npm run lint` runs it with
// zero warnings allowed; `npm test` runs it.
import { defineConfig, globalIgnores } from 'eslint/config'
import nextVitals from 'eslint-config-next/core-web-vitals'
import nextTs from 'eslint-config-next/typescript'
import tseslint from 'typescript-eslint'

/** Imports a room may not make, as `no-restricted-imports` patterns with the reason shown to whoever breaks it. */
const forbid = (...rules) => ({ 'no-restricted-imports': ['error', { patterns: rules.map(([group, message]) => ({ group, message })) }] })

const SERVER = [['@/lib/server/*', '**/lib/server/*'], 'Runs in the browser or in applications: it cannot import server code.']
const ENGINES = [['@/lib/server/engines/*', '**/engines/*'], 'Routes, pages and components call request-time operations (lib/server/<domain>), never an engine.']
const ROUTES = [['@/app/*', '**/app/*'], 'lib/ never imports a route or page: app/ depends on lib/, not the reverse.']
const CLIENT = [['@/lib/client/*', '**/lib/client/*', '@/components/*'], 'Server and shared code cannot import browser code.']

export default defineConfig([
  ...nextVitals,
  ...nextTs,
  ...tseslint.configs.recommended,
  globalIgnores(['.next/**', 'node_modules/**', 'packages/*/dist/**', 'lib/generated/**', 'test-results/**', 'playwright-report/**', '.data/**', 'next-env.d.ts']),
  {
    // The import plugin reads Lazarus' own code; parsing dependencies (PGlite's bundles overflow the parser) adds nothing.
    settings: { 'import/ignore': ['node_modules'] },
    rules: {
      // Unused code is found, not tolerated; a leading underscore marks a parameter a signature requires.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Import cycles are `npm run lint:cycles` (tests/tools/import-cycles.mjs): the same graph in 2 s where
      // import/no-cycle took 20 s, more than half of ESLint's time.
    },
  },
  // The guard is a package applications install (packages/guard): amqplib, Node and its own files, nothing of Lazarus.
  { files: ['packages/guard/**'], rules: forbid([['@/*', '**/lib/*', '**/app/*', '**/components/*', 'next', 'next/*', 'react'], 'The guard is a standalone package: only amqplib, Node and its own files.']) },
  { files: ['app/**', 'components/**'], rules: forbid(ENGINES) },
  { files: ['components/**', 'lib/client/**'], rules: forbid(SERVER, ENGINES) },
  { files: ['lib/shared/**'], rules: forbid(SERVER, CLIENT, ROUTES) },
  { files: ['lib/server/**', 'lib/worker/**', 'lib/cli/**'], rules: forbid(ROUTES, CLIENT) },
  // Request-time domains run what a request asks for; an engine's loop and store are the engine's. A domain may name an
  // engine's types (health reports the drainer's status), never call it: what both need lives in the domain. (One rule
  // replaces another of the same name in flat config, so this one repeats the server's own boundaries.)
  {
    files: ['lib/server/**'],
    ignores: ['lib/server/engines/**', 'lib/server/platform/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          ...forbid(ROUTES, CLIENT)['no-restricted-imports'][1].patterns,
          { group: ENGINES[0], message: 'A request-time domain never calls an engine (docs/ARCHITECTURE.md#where-code-lives).', allowTypeImports: true },
        ],
      }],
    },
  },
  // Benchmarks measure the route handlers as Next calls them, so they alone may import routes.
  { files: ['lib/bench/**'], rules: forbid(CLIENT) },
  // React's rules (the React Compiler's among them, most of ESLint's time) where React can be: pages, components, browser
  // and shared code. The server, the engines, the tools, the guard and the tests render nothing.
  {
    files: ['lib/server/**', 'lib/worker/**', 'lib/cli/**', 'lib/bench/**', 'lib/build/**', 'lib/demo/**', 'packages/**', 'tests/**'],
    rules: Object.fromEntries(
      [...nextVitals, ...nextTs].flatMap((config) => Object.keys(config.rules ?? {})).filter((rule) => /^react(-hooks)?\//.test(rule)).map((rule) => [rule, 'off']),
    ),
  },
  // Playwright's fixtures receive a function named `use`; it is not React's hook.
  { files: ['tests/e2e/**'], rules: { 'react-hooks/rules-of-hooks': 'off' } },
  // Tests and benchmarks may use `any` for hostile input and the shapes of raw responses.
  { files: ['tests/**', 'lib/bench/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
])
