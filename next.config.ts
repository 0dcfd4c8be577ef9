import type { NextConfig } from 'next'

const nextConfig: NextConfig = {
  output: 'standalone',
  serverExternalPackages: ['amqplib', '@electric-sql/pglite', 'pglite-prisma-adapter'],
  poweredByHeader: false,
  // `npm test` type-checks the whole repository with tsc before it needs the build (tests/run-all.sh); the build it
  // runs beside that check need not do the same work again. Every other build checks types as usual.
  typescript: { ignoreBuildErrors: process.env.LAZARUS_BUILD_TYPECHECKED === '1' },
}

export default nextConfig
