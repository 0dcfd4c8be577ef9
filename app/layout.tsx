import type { Metadata } from 'next'
import { cookies } from 'next/headers'
import { connection } from 'next/server'
import type { ReactNode } from 'react'
import { Providers } from '@/components/providers'
import { parseDisplayPrefs } from '@/lib/shared/display-prefs'
import './globals.css'

export const metadata: Metadata = { title: { default: 'Lazarus', template: '%s · Lazarus' }, description: 'Triage and replay dead-lettered RabbitMQ messages' }

// Every page is rendered per request: each response carries its own CSP nonce (lib/server/platform/http/front.ts), which Next puts on
// its scripts; a page prerendered at build time would carry none and its scripts would be blocked.
export default async function RootLayout({ children }: { children: ReactNode }) {
  await connection()
  const jar = await cookies()
  const prefs = parseDisplayPrefs((name) => jar.get(name)?.value)
  // The theme is an attribute the server writes from the cookie, and CSS alone follows the system setting: no script
  // runs before paint, so no flash of the wrong theme and nothing for the CSP to allow (docs/security.md).
  return (
    <html lang="en" data-theme={prefs.theme}>
      <body className="min-h-screen font-sans">
        <Providers prefs={prefs}>{children}</Providers>
      </body>
    </html>
  )
}
