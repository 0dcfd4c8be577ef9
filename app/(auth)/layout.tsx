import type { ReactNode } from 'react'

/** Sign-in, first-run setup and set-password: a small card, no navigation. */
export default function AuthLayout({ children }: { children: ReactNode }) {
  return (
    <main className="flex min-h-screen items-start justify-center bg-zinc-50 px-4 pt-[12vh]">
      <div className="w-full max-w-sm">
        <p className="mb-4 flex items-center justify-center gap-1.5 text-lg font-semibold tracking-tight text-zinc-900">
          <span aria-hidden className="inline-block size-3 rounded-sm bg-brand" />
          Lazarus
        </p>
        <div className="rounded-md border border-zinc-200 bg-white p-5 shadow-xs">{children}</div>
      </div>
    </main>
  )
}
