import { defineConfig } from 'tsup'

// What `npm pack` ships (prepack runs it): one ESM and one CommonJS bundle of src/index.ts, each with its type
// declarations. amqplib is a peer dependency (the guard only names its types), so it is never bundled.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  platform: 'node',
  target: 'node20',
})
