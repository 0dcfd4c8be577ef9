import type { Metadata } from 'next'
import type { ReactNode } from 'react'
import { AppHeader } from '@/components/layout/app-header'
import { Providers } from '@/components/providers'
import './globals.css'

export const metadata: Metadata = { title: { default: 'Lazarus', template: '%s · Lazarus' }, description: 'Triage and replay dead-lettered RabbitMQ messages' }

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">
        <Providers>
          <AppHeader />
          <main className="mx-auto max-w-[1600px] min-w-0 px-4 py-4">{children}</main>
        </Providers>
      </body>
    </html>
  )
}
