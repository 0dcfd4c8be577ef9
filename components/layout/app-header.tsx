import Link from 'next/link'

const NAV = [
  { href: '/', label: 'Groups' },
  { href: '/messages', label: 'Messages' },
  { href: '/sources', label: 'Sources' },
]

export function AppHeader() {
  return (
    <header className="border-b border-zinc-200 bg-white">
      <div className="mx-auto flex h-10 max-w-[1600px] items-center gap-6 px-4">
        <Link href="/" className="font-semibold tracking-tight text-zinc-900">
          Lazarus
        </Link>
        <nav className="flex gap-4 text-zinc-600">
          {NAV.map((item) => (
            <Link key={item.href} href={item.href} className="hover:text-zinc-900">
              {item.label}
            </Link>
          ))}
        </nav>
      </div>
    </header>
  )
}
