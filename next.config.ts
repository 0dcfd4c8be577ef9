import type { NextConfig } from 'next'

const nextConfig: NextConfig = {
  output: 'standalone',
  serverExternalPackages: ['amqplib', '@electric-sql/pglite', 'pglite-prisma-adapter'],
  poweredByHeader: false,
}

export default nextConfig
