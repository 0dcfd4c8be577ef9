import { defineConfig } from 'prisma/config'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  // env('DATABASE_URL') throws when unset, which would break `prisma generate` in embedded mode.
  datasource: { url: process.env.DATABASE_URL ?? '' },
})
