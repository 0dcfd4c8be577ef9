'use client'

import { cn } from '@/lib/client/cn'
import { useDisplayPrefs } from '@/lib/client/use-display-prefs'
import { THEMES, TIME_MODES } from '@/lib/shared/display-prefs'

function Segmented<T extends string>({ label, options, value, onChange, names }: { label: string; options: readonly T[]; value: T; onChange: (v: T) => void; names: Record<T, string> }) {
  return (
    <div className="flex items-center justify-between gap-2 px-3 py-1.5">
      <span className="text-xs text-zinc-500">{label}</span>
      <div role="radiogroup" aria-label={label} className="flex rounded-md border border-zinc-200 p-px">
        {options.map((o) => (
          <button
            key={o}
            type="button"
            role="radio"
            aria-checked={o === value}
            onClick={() => onChange(o)}
            className={cn('rounded px-1.5 py-px text-xs', o === value ? 'bg-zinc-200 font-medium text-zinc-900' : 'text-zinc-600 hover:text-zinc-900')}
          >
            {names[o]}
          </button>
        ))}
      </div>
    </div>
  )
}

/** Theme and time zone, each kept in a cookie so the server renders them too. */
export function DisplayPrefsControls() {
  const { theme, time, zone, setTheme, setTime } = useDisplayPrefs()
  return (
    <>
      <Segmented label="Theme" options={THEMES} value={theme} onChange={setTheme} names={{ system: 'System', light: 'Light', dark: 'Dark' }} />
      <Segmented label="Times in" options={TIME_MODES} value={time} onChange={setTime} names={{ local: 'Local', utc: 'UTC' }} />
      {time === 'local' && <p className="truncate px-3 pb-1 text-[11px] text-zinc-400">Local is {zone}</p>}
    </>
  )
}
