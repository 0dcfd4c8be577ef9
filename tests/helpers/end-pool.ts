import type pg from 'pg'

/**
 * Ends a pool of the test's own once its connections have closed. `pool.end()` resolves as soon as it has asked each
 * connection to end. In that gap a `DROP DATABASE … WITH (FORCE)` terminates a connection still open, which the pool
 * raises as an uncaught "terminating connection due to administrator command", and an `ALTER DATABASE … RENAME` finds
 * the database still in use.
 */
export async function endPool(pool: pg.Pool): Promise<void> {
  let open = pool.totalCount
  const closed = new Promise<void>((resolve) => {
    if (open === 0) return resolve()
    pool.on('remove', () => {
      if (--open === 0) resolve()
    })
  })
  await pool.end()
  await closed
}
