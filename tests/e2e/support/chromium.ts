import { existsSync } from 'node:fs'

/**
 * Which Debian Chromium the browser tests and the topology bench drive. Playwright never downloads one here
 * (docs/ARCHITECTURE.md#tests). Debian's `chromium-headless-shell` is preferred when it is installed: it is the same
 * Chromium 156 without the browser's UI layer, the binary Playwright itself uses for headless runs, and it rendered the
 * same specs for 20–30 % less CPU than the full browser in headless mode. `.ci/services.sh` installs it. CHROMIUM_PATH
 * chooses another build.
 */
export const CHROMIUM_EXECUTABLES = ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium'] as const

export function chromiumExecutable(): string {
  return process.env.CHROMIUM_PATH ?? CHROMIUM_EXECUTABLES.find((path) => existsSync(path)) ?? CHROMIUM_EXECUTABLES[1]
}
