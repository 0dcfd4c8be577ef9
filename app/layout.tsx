import type { Metadata } from 'next'
import { connection } from 'next/server'
import type { ReactNode } from 'react'
import { Providers } from '@/components/providers'
import './globals.css'

export const metadata: Metadata = { title: { default: 'Lazarus', template: '%s · Lazarus' }, description: 'Triage and replay dead-lettered RabbitMQ messages' }

// Every page is rendered per request: each response carries its own CSP nonce (lib/server/platform/http/front.ts), which Next puts on
// its scripts; a page prerendered at build time would carry none and its scripts would be blocked.
export default async function RootLayout({ children }: { children: ReactNode }) {
  await connection()
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">
        <Providers>{children}</Providers>
      </body>
    </html>
  )
}
