import { afterAll } from 'vitest'

/**
 * For the projects whose files share one process per worker (vitest.config.ts, CONFIGURES_ITS_PROCESS): the process's
 * configuration is read once, so a file that changes the environment would configure the files after it in the same
 * worker. vitest.config.ts gives such files a process of their own when it can see them do it; this catches the ways it
 * cannot (a helper that sets a variable), naming what changed, instead of a later file failing on someone else's setting.
 */
const watched = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([name]) => /^(LAZARUS_|AMQP_|RABBITMQ_|DATABASE_URL$|TZ$)/.test(name)))

const atStart = watched(process.env)

afterAll(() => {
  const now = watched(process.env)
  const changed = [...new Set([...Object.keys(atStart), ...Object.keys(now)])].filter((name) => atStart[name] !== now[name])
  if (changed.length > 0) {
    throw new Error(
      `this file changed ${changed.join(', ')} in a process other files share: set the configuration where ` +
        'vitest.config.ts can see it (CONFIGURES_ITS_PROCESS), so the file runs in a process of its own',
    )
  }
})
