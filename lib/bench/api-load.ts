/**
 * Loads `rows` synthetic dead letters into a migrated database with INSERT … SELECT (no per-row round trips):
 * a plan table fixes each row's group and failure time (sorted, so ids follow failed_at as they do when a
 * drainer ingests), chunks of it are expanded into full rows on two connections, then error_groups,
 * group_arrivals, their per-source rows (group_source_stats, group_source_arrivals) and sources are derived from the
 * stored rows so every counter matches them.
 *
 * The schema is read at run time: columns another migration adds are filled when they are NOT NULL without a
 * default, and indexes on dead_letters and dead_letter_states (whatever they are) are dropped for the load and rebuilt after it.
 */
import pg from 'pg'
import { BODY_FIELD_EVERY, BODY_FIELD_VALUE, BODY_TERM, buildGroups, RARE_EVERY, RARE_TERM, SOURCES, TENANT_COMMON, TENANT_COMMON_SHARE, TENANT_RARE, TENANT_TAIL, toFormat, WORDS, type GroupSpec } from './api-catalog'

export type LoadResult = { groups: GroupSpec[]; groupIds: Map<number, string>; phases: [string, number][]; filled: string[] }

type Column = { name: string; nullable: boolean; hasDefault: boolean; generated: boolean; identity: boolean; dataType: string; udt: string }

const log = (line: string) => process.stdout.write(`${line}\n`)

async function columnsOf(client: pg.Client, table: string): Promise<Column[]> {
  const { rows } = await client.query<{ column_name: string; is_nullable: string; column_default: string | null; is_generated: string; is_identity: string; data_type: string; udt_name: string }>(
    `SELECT column_name, is_nullable, column_default, is_generated, is_identity, data_type, udt_name
     FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  )
  return rows.map((r) => ({
    name: r.column_name, nullable: r.is_nullable === 'YES', hasDefault: r.column_default !== null, generated: r.is_generated === 'ALWAYS',
    identity: r.is_identity === 'YES', dataType: r.data_type, udt: r.udt_name,
  }))
}

/** A neutral value for a NOT NULL column this loader does not know (added by a later migration). */
function fillerFor(column: Column, timeExpr: string): string {
  const t = column.dataType
  if (t === 'ARRAY') return `'{}'::${column.udt.replace(/^_/, '')}[]`
  if (t === 'text' || t.startsWith('character')) return `''`
  if (['smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision'].includes(t)) return '0'
  if (t === 'boolean') return 'false'
  if (t.startsWith('timestamp') || t === 'date') return timeExpr
  if (t === 'json' || t === 'jsonb') return `'{}'::${t}`
  if (t === 'bytea') return `'\\x'::bytea`
  if (t === 'uuid') return 'gen_random_uuid()'
  if (t === 'USER-DEFINED') return `(enum_range(NULL::${column.udt}))[1]`
  throw new Error(`bench loader: cannot fill NOT NULL column ${column.name} of type ${t}; teach lib/bench/api-load.ts about it`)
}

/**
 * The column list and SELECT expressions for `table`: the known ones that exist, plus a filler for every
 * NOT NULL column without a default this loader has never heard of.
 */
async function insertTarget(client: pg.Client, table: string, known: Record<string, string>, timeExpr: string, filled: string[]) {
  const columns = await columnsOf(client, table)
  const names: string[] = []
  const exprs: string[] = []
  for (const c of columns) {
    if (c.generated) continue
    if (c.name in known) {
      names.push(c.name)
      exprs.push(known[c.name])
    } else if (!c.nullable && !c.hasDefault && !c.identity) {
      names.push(c.name)
      exprs.push(fillerFor(c, timeExpr))
      filled.push(`${table}.${c.name} (${c.dataType})`)
    }
  }
  const missing = Object.keys(known).filter((k) => !columns.some((c) => c.name === k))
  if (missing.length) log(`  note: ${table} has no column ${missing.join(', ')}; left out`)
  return { columns: names.join(', '), select: exprs.join(',\n    ') }
}

const SETUP = `
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
CREATE UNLOGGED TABLE bench.src (idx int PRIMARY KEY, id bigint, queue text, exchange text, dlx text, routing_key text, origin_queue text);
CREATE UNLOGGED TABLE bench.grp (
  rank int PRIMARY KEY, group_id bigint, error_type text, message_template text, kind text, reason text, attempts int,
  nrows int, source_idx int[], versions text[], service text, framework text, entity_prefix text, message_type text,
  stack_head text, stack_tail text, headers_format text, x_death_format text, properties_format text,
  start_days_ago float8, end_days_ago float8, burst_share float8, burst_days_ago float8, burst_hours float8);
CREATE UNLOGGED TABLE bench.txt (id int PRIMARY KEY, txt text);
`

/** The order of the format() arguments rowsSql passes for each template's slots. */
const HEADER_SLOTS = ['message', 'stack', 'x_death', 'retries', 'retries_str', 'failed_iso', 'host', 'version', 'message_id', 'failure_kind', 'uuid', 'origin_queue', 'exchange', 'routing_key', 'tenant'] as const
const X_DEATH_SLOTS = ['attempts_str', 'failed_epoch_str', 'origin_queue', 'exchange', 'routing_key'] as const
const PROPERTY_SLOTS = ['correlation_id', 'message_id', 'sent_epoch'] as const

/**
 * Per-row values; every random() sits in a subquery target list, so each row gets its own draw. OFFSET 0 keeps
 * the planner from inlining the layers, which would recompute a derived text (message, stack, headers) once per use.
 */
function rowsSql(target: { columns: string; select: string }): string {
  return `
WITH stored AS (
INSERT INTO dead_letters (${target.columns})
SELECT
    ${target.select}
FROM (
  SELECT b.*, s.id AS source_id, s.queue, s.exchange, s.dlx, s.routing_key, s.origin_queue,
    CASE WHEN b.message_template IS NULL THEN NULL ELSE
      replace(replace(replace(replace(replace(replace(replace(replace(b.message_template,
        '{int}', b.v_int::text), '{small}', b.v_small::text), '{hex}', substr(b.h, 1, 12)), '{uuid}', b.req_uuid),
        '{ms}', (5000 * (1 + b.v_small % 6))::text), '{date}', to_char(b.failed_at, 'DD/MM/YYYY HH24:MI')),
        '{ip}', '10.42.' || (b.v_small % 8) || '.' || (b.v_int % 250)), '{cur}', (ARRAY['GBP','USD','CHF','PLN','SEK','JPY'])[1 + b.v_small % 6])
    END AS msg,
    b.entity_prefix || b.entity_no AS entity,
    CASE WHEN b.kind = 'transient' AND b.r_kind < 0.12 THEN 'exhausted' ELSE b.kind END AS fkind,
    (substr(b.h, 1, 8) || '-' || substr(b.h, 9, 4) || '-' || substr(b.h, 13, 4) || '-' || substr(b.h, 17, 4) || '-' || substr(b.h, 21, 12)) AS message_id,
    to_char(b.failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS failed_iso,
    extract(epoch FROM b.failed_at)::bigint AS failed_epoch,
    format('{"messageId":%s,"type":%s,"occurredAt":%s,"entityId":%s,"customer":{"id":%s,"name":%s,"email":%s,"locale":%s},'
      '"amount":{"value":%s,"currency":%s},"lines":[{"sku":%s,"qty":%s,"unitPrice":%s},{"sku":%s,"qty":%s,"unitPrice":%s}],'
      '%s"channel":%s,"source":{"service":%s,"version":%s},"notes":',
      to_json(b.req_uuid), to_json(b.message_type), to_json(to_char(b.failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
      to_json(b.entity_prefix || b.entity_no), to_json('c-' || b.customer_no),
      to_json(CASE WHEN b.rare THEN 'Amelie ${BODY_TERM[0].toUpperCase()}${BODY_TERM.slice(1)}' ELSE b.first_name || ' ' || b.last_name END),
      to_json(CASE WHEN b.rare THEN 'amelie.${BODY_TERM}@example.ch' ELSE lower(b.first_name) || '.' || lower(b.last_name) || (b.customer_no % 97) || '@example.com' END),
      to_json((ARRAY['de-DE','en-GB','fr-FR','nl-NL','pl-PL','it-IT'])[1 + b.v_small % 6]),
      round((b.r_amount * 480 + 5)::numeric, 2), to_json((ARRAY['EUR','EUR','EUR','GBP','CHF','PLN'])[1 + b.v_int % 6]),
      to_json('SKU-' || (10000 + b.v_int % 9000)), 1 + b.v_small % 4, round((b.r_amount * 90 + 1)::numeric, 2),
      to_json('SKU-' || (10000 + (b.v_int * 7) % 9000)), 1 + b.v_small % 3, round((b.r_amount * 35 + 1)::numeric, 2),
      CASE WHEN b.escalation_ticket IS NOT NULL THEN format('"escalation":{"level":%s,"ticket":%s},', to_json('${BODY_FIELD_VALUE}'::text), to_json(b.escalation_ticket)) ELSE '' END,
      to_json((ARRAY['web','app','marketplace','pos','api'])[1 + b.v_int % 5]), to_json(b.service), to_json(b.version)
    ) AS body_head,
    t.txt
  FROM (
    SELECT a.*, g.*,
      g.source_idx[1 + floor(a.r_source * cardinality(g.source_idx))::int] AS si,
      -- Newer versions fail more often: they carry more of the traffic.
      g.versions[least(cardinality(g.versions), 1 + floor(sqrt(a.r_version) * cardinality(g.versions))::int)] AS version
    FROM (
      SELECT p.n, p.gi, p.failed_at,
        random() AS r_source, random() AS r_version, random() AS r_kind, random() AS r_seen, random() AS r_amount,
        -- Entity numbers stay below 250000 (six digits), so the rare rows' seven-digit number matches no other entity.
        CASE WHEN p.n % $5::int = 1 THEN ${RARE_TERM} ELSE floor(power(random(), 2.5) * 250000)::int END AS entity_no,
        floor(random() * 180000)::int AS customer_no,
        (1 + floor(random() * 99999))::int AS v_int,
        (1 + floor(random() * 64))::int AS v_small,
        (ARRAY['Anna','Lukas','Sofia','Jonas','Emma','Noah','Mia','Elias','Lea','Paul','Clara','Felix','Marta','Tomasz','Chloé','Lars','Ines','Mateo','Aoife','Jan'])[1 + floor(random() * 20)::int] AS first_name,
        (ARRAY['Schmidt','Kowalski','Dubois','Jansen','Rossi','Novak','Berg','Horvat','Silva','Murphy','Meyer','Nagy','Larsen','Costa','Fischer','Bakker','Moreau','Weber','Lindqvist','Popescu'])[1 + floor(random() * 20)::int] AS last_name,
        md5(p.n::text || $4::text) AS h,
        gen_random_uuid()::text AS req_uuid,
        floor(random() * 4096)::int AS text_id,
        floor(random() * 300)::int AS text_off,
        (1 + floor(random() * 24))::int AS host_no,
        floor(random() * 90)::int AS ingest_delay_s,
        (p.n % $5::int = 1) AS rare,
        -- The body field only 1 in BODY_FIELD_EVERY bodies has (issue 28, "Body fields").
        CASE WHEN p.n % ${BODY_FIELD_EVERY} = 37 THEN 'INC-' || p.n END AS escalation_ticket,
        CASE WHEN p.n % $5::int = 1 THEN '${TENANT_RARE}' WHEN random() < ${TENANT_COMMON_SHARE} THEN '${TENANT_COMMON}'
          ELSE 'tenant-' || lpad(floor(power(random(), 3) * ${TENANT_TAIL})::int::text, 4, '0') END AS tenant
      FROM bench.plan p
      WHERE p.n BETWEEN $1 AND $2
      -- Sorted while the rows are narrow: ids then follow failed_at, as they do when a drainer ingests.
      ORDER BY p.n
    ) a
    JOIN bench.grp g ON g.rank = a.gi
  ) b
  JOIN bench.src s ON s.idx = b.si
  JOIN bench.txt t ON t.id = b.text_id
  OFFSET 0
) c
CROSS JOIN LATERAL (
  SELECT
    c.stack_head || c.msg || c.stack_tail AS stack,
    c.body_head || to_json(substr(c.txt, 1 + c.text_off, greatest(16, 1021 - octet_length(c.body_head))))::text || '}' AS body_text
  OFFSET 0
) x
CROSS JOIN LATERAL (
  -- Arguments in X_DEATH_SLOTS order.
  SELECT format(c.x_death_format, to_json(c.attempts::text)::text, to_json(c.failed_epoch::text)::text,
    to_json(c.origin_queue)::text, to_json(c.exchange)::text, to_json(c.routing_key)::text) AS x_death_text
  OFFSET 0
) y
CROSS JOIN LATERAL (
  SELECT
    -- Arguments in HEADER_SLOTS order.
    format(c.headers_format, coalesce(to_json(c.msg)::text, 'null'), coalesce(to_json(x.stack)::text, 'null'), y.x_death_text,
      greatest(c.attempts - 1, 0)::text, to_json(greatest(c.attempts - 1, 0)::text)::text, to_json(c.failed_iso)::text,
      to_json(c.service || '-' || substr(md5(c.host_no::text), 1, 5))::text, to_json(c.version)::text, to_json(c.message_id)::text,
      to_json(c.fkind)::text, to_json(c.req_uuid)::text, to_json(c.origin_queue)::text, to_json(c.exchange)::text,
      to_json(c.routing_key)::text, to_json(c.tenant)::text) AS headers_text,
    -- Arguments in PROPERTY_SLOTS order.
    format(c.properties_format, to_json(c.req_uuid)::text, to_json(c.message_id)::text, (c.failed_epoch - c.attempts * 30 - 2)::text) AS properties_text
  OFFSET 0
) z
RETURNING id, failed_at, fingerprint
),
-- Each row's status from its fingerprint's first two bytes (uniform, like the random() draws above): a share of the
-- older rows replayed, resolved or held, fewer of the last week's. Dead rows have no status row.
status_draw AS (
  SELECT id, failed_at, (get_byte(fingerprint, 0) * 256 + get_byte(fingerprint, 1)) / 65536.0 AS r FROM stored
)
INSERT INTO dead_letter_states (dead_letter_id, status, failed_at)
SELECT id,
  CASE WHEN failed_at < $3::timestamptz - interval '7 days'
    THEN CASE WHEN r < 0.12 THEN 'replayed' WHEN r < 0.20 THEN 'resolved' WHEN r < 0.205 THEN 'held' ELSE 'dead' END
    ELSE CASE WHEN r < 0.03 THEN 'replayed' WHEN r < 0.05 THEN 'resolved' WHEN r < 0.06 THEN 'held' ELSE 'dead' END
  END,
  failed_at
FROM status_draw
WHERE r < CASE WHEN failed_at < $3::timestamptz - interval '7 days' THEN 0.205 ELSE 0.06 END`
}

/** SELECT expressions for the dead_letters columns, over the aliases of rowsSql. */
const DEAD_LETTER_EXPRS: Record<string, string> = {
  source_id: 'c.source_id',
  fingerprint: `sha256(convert_to(c.n::text || ':' || $4::text, 'UTF8'))`,
  seen_count: 'CASE WHEN c.r_seen < 0.02 THEN 2 ELSE 1 END',
  body: `convert_to(x.body_text, 'UTF8')`,
  body_size: `octet_length(x.body_text)`,
  body_encoding: `'json'`,
  body_preview: 'x.body_text',
  properties: 'z.properties_text::jsonb',
  headers: 'z.headers_text::json',
  x_death: 'y.x_death_text::json',
  delivery_exchange: 'c.dlx',
  delivery_routing_key: 'c.routing_key',
  redelivered: 'false',
  death_reason: 'c.reason',
  attempts: 'c.attempts',
  origin_exchange: 'c.exchange',
  origin_routing_keys: 'ARRAY[c.routing_key]',
  origin_queue: 'c.origin_queue',
  first_death_at: `c.failed_at - (c.attempts - 1) * interval '30 seconds'`,
  last_death_at: 'c.failed_at',
  failed_at: 'c.failed_at',
  error_type: 'c.error_type',
  error_message: 'c.msg',
  error_stack: 'x.stack',
  failure_kind: 'c.fkind',
  service: 'c.service',
  service_version: 'c.version',
  framework: 'c.framework',
  entity_key: `CASE WHEN c.framework = 'plain-dlx' THEN NULL ELSE c.entity END`,
  group_id: 'c.group_id',
  flags: `'{}'::text[]`,
  // A replayed message that died again points at its earlier copy (ids follow n closely).
  lineage_origin_id: `CASE WHEN c.r_seen > 0.985 THEN greatest(1, c.n - 5000)::text END`,
  replay_count: `CASE WHEN c.r_seen > 0.985 THEN 1 ELSE 0 END`,
  ingested_at: `c.failed_at + c.ingest_delay_s * interval '1 second'`,
}

/** Failure times: uniform over each group's active window, plus a share in one incident burst. */
const PLAN_SQL = `
CREATE UNLOGGED TABLE bench.plan AS
SELECT row_number() OVER (ORDER BY t.failed_at) AS n, t.gi, t.failed_at
FROM (
  SELECT g.rank AS gi,
    greatest($1::timestamptz - g.start_days_ago * interval '1 day', least($1::timestamptz - g.end_days_ago * interval '1 day' - interval '1 second',
      CASE WHEN random() < g.burst_share
        THEN $1::timestamptz - g.burst_days_ago * interval '1 day' + (random() + random() + random() - 1.5) * g.burst_hours * interval '1 hour'
        ELSE $1::timestamptz - g.start_days_ago * interval '1 day' + random() * (g.start_days_ago - g.end_days_ago) * interval '1 day'
      END)) AS failed_at
  FROM bench.grp g, generate_series(1, g.nrows) i
) t`

const ms = (start: number) => Math.round(performance.now() - start)

export async function loadDataset(url: string, rows: number, options: { jobs?: number; chunk?: number } = {}): Promise<LoadResult> {
  const jobs = options.jobs ?? 2
  const chunk = options.chunk ?? 20_000
  const groups = buildGroups(rows)
  const phases: [string, number][] = []
  const filled: string[] = []
  const now = new Date()
  const seed = 'lazarus-bench-api'
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`SET work_mem = '256MB'; SET maintenance_work_mem = '1GB'; SET synchronous_commit = off; SELECT setseed(0.4242)`)
    let t = performance.now()
    await client.query(SETUP)

    // Sources, then groups: dead_letters rows carry both ids.
    const sourceTarget = await insertTarget(client, 'sources', {
      vhost: `'/'`, queue: 's.queue', order_sensitive: `s.queue LIKE 'orders.%' OR s.queue LIKE 'payments.%'`,
      entity_key: `CASE WHEN s.queue LIKE 'analytics.%' THEN NULL ELSE '{"kind":"jsonPointer","pointer":"/entityId"}'::jsonb END`,
    }, '$2::timestamptz', filled)
    await client.query(
      `INSERT INTO sources (${sourceTarget.columns}) SELECT ${sourceTarget.select} FROM json_to_recordset($1::json) AS s(idx int, queue text) WHERE $2::timestamptz IS NOT NULL ORDER BY s.idx`,
      [JSON.stringify(SOURCES.map((s) => ({ idx: s.idx, queue: s.queue }))), now],
    )
    await client.query(
      `INSERT INTO bench.src SELECT s.idx, src.id, s.queue, s.exchange, s.dlx, s.routing_key, s.origin_queue
       FROM json_to_recordset($1::json) AS s(idx int, queue text, exchange text, dlx text, routing_key text, origin_queue text)
       JOIN sources src ON src.queue = s.queue AND src.vhost = '/'`,
      [JSON.stringify(SOURCES.map((s) => ({ idx: s.idx, queue: s.queue, exchange: s.exchange, dlx: s.dlx, routing_key: s.routingKey, origin_queue: s.originQueue })))],
    )
    const groupTarget = await insertTarget(client, 'error_groups', {
      signature: 'g.signature', title: 'g.title', error_type: 'g.error_type', message_pattern: 'g.message_pattern',
      first_seen: '$2::timestamptz', last_seen: '$2::timestamptz', status: 'g.status', note: 'g.note', ticket_url: 'g.ticket_url',
    }, '$2::timestamptz', filled)
    await client.query(
      `INSERT INTO error_groups (${groupTarget.columns}) SELECT ${groupTarget.select}
       FROM json_to_recordset($1::json) AS g(rank int, signature text, title text, error_type text, message_pattern text, status text, note text, ticket_url text)
       ORDER BY g.rank`,
      [JSON.stringify(groups.map((g) => ({ rank: g.rank, signature: g.signature, title: g.title, error_type: g.errorType, message_pattern: g.messagePattern, status: g.status, note: g.note, ticket_url: g.ticketUrl }))), now],
    )
    const { rows: ids } = await client.query<{ signature: string; id: string }>('SELECT signature, id::text FROM error_groups')
    const idBySignature = new Map(ids.map((r) => [r.signature, r.id]))
    const groupIds = new Map(groups.map((g) => [g.rank, idBySignature.get(g.signature)!]))
    await client.query(
      `INSERT INTO bench.grp SELECT * FROM json_populate_recordset(NULL::bench.grp, $1::json)`,
      [JSON.stringify(groups.map((g) => ({
        rank: g.rank, group_id: groupIds.get(g.rank), error_type: g.errorType, message_template: g.messageTemplate, kind: g.kind,
        reason: g.reason, attempts: g.attempts, nrows: g.rows, source_idx: g.sourceIdx, versions: g.versions, service: g.service,
        framework: g.framework, entity_prefix: g.entityPrefix, message_type: g.messageType, stack_head: g.stackHead,
        stack_tail: g.stackTail, headers_format: toFormat(g.headersTemplate, HEADER_SLOTS),
        x_death_format: toFormat(g.xDeathTemplate, X_DEATH_SLOTS), properties_format: toFormat(g.propertiesTemplate, PROPERTY_SLOTS),
        start_days_ago: g.startDaysAgo, end_days_ago: g.endDaysAgo, burst_share: g.burstShare, burst_days_ago: g.burstDaysAgo,
        burst_hours: g.burstHours,
      })))],
    )
    // 4096 paragraphs of ~1.3 KB; each body takes a slice at a random offset, so free text rarely repeats.
    await client.query(
      `INSERT INTO bench.txt SELECT i, array_to_string(ARRAY(SELECT ($1::text[])[1 + floor(random() * cardinality($1::text[]))::int]
         FROM generate_series(1, 200) WHERE i >= 0), ' ') FROM generate_series(0, 4095) i`,
      [WORDS],
    )
    await client.query(PLAN_SQL, [now])
    await client.query('CREATE UNIQUE INDEX ON bench.plan (n)')
    phases.push(['plan (groups, sources, failure times)', ms(t)])

    // Indexes are cheaper to build once than to maintain row by row; constraint indexes stay (they guard the data).
    t = performance.now()
    const { rows: indexes } = await client.query<{ name: string; def: string }>(
      `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
       WHERE i.indrelid IN ('dead_letters'::regclass, 'dead_letter_states'::regclass) AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`,
    )
    for (const index of indexes) await client.query(`DROP INDEX ${index.name}`)

    const target = await insertTarget(client, 'dead_letters', DEAD_LETTER_EXPRS, 'c.failed_at', filled)
    const sql = rowsSql(target)
    const rareEvery = Math.min(RARE_EVERY, Math.max(1, Math.floor(rows / 10)))
    let next = 1
    let done = 0
    let reported = 0
    const worker = async () => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try {
        await c.query(`SET synchronous_commit = off; SET work_mem = '64MB'`)
        while (next <= rows) {
          const from = next
          const to = Math.min(rows, from + chunk - 1)
          next = to + 1
          await c.query(sql, [from, to, now, seed, rareEvery])
          done += to - from + 1
          if (done - reported >= Math.max(chunk, rows / 10) || done === rows) {
            reported = done
            log(`  … ${done.toLocaleString('en-US')} rows (${Math.round(done / ((performance.now() - t) / 1000)).toLocaleString('en-US')} rows/s)`)
          }
        }
      } finally {
        await c.end()
      }
    }
    await Promise.all(Array.from({ length: jobs }, worker))
    phases.push([`dead_letters rows (${jobs} connections, INSERT … SELECT in chunks of ${chunk.toLocaleString('en-US')})`, ms(t)])

    t = performance.now()
    for (const index of indexes) {
      const start = performance.now()
      await client.query(index.def)
      log(`  index ${index.name}: ${ms(start)} ms`)
    }
    phases.push([`rebuild ${indexes.length} secondary indexes`, ms(t)])

    // What the background search indexer would have produced, in one pass: its trigram index is built afterwards.
    t = performance.now()
    await client.query('TRUNCATE search_backlog, dead_letter_search')
    // The search table's secondary indexes (trigram, and header terms where the schema has them) are rebuilt after.
    const { rows: searchIndexes } = await client.query<{ name: string; def: string }>(
      `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
       WHERE i.indrelid = 'dead_letter_search'::regclass AND NOT i.indisprimary`,
    )
    for (const index of searchIndexes) await client.query(`DROP INDEX ${index.name}`)
    await client.query(`SET max_parallel_workers_per_gather = 2; SET maintenance_work_mem = '512MB'`)
    const { rows: [{ terms, bodyTerms }] } = await client.query<{ terms: boolean; bodyTerms: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'dead_letter_search' AND column_name = 'terms') AS terms,
         EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'dead_letter_terms_v2') AS "bodyTerms"`,
    )
    // With body field terms (migration 20261215000000_body_field_terms) where the schema has them, as the indexer writes.
    const termsOf = bodyTerms ? 'dead_letter_terms_v2(headers, properties, body, body_encoding, body_size)' : 'dead_letter_terms_v1(headers, properties)'
    // In id ranges on `jobs` connections, as the rows were stored: one statement would use one core for the whole table.
    const fill = terms
      ? `INSERT INTO dead_letter_search (dead_letter_id, text, terms)
         SELECT id, dead_letter_search_text_v2(error_type, error_message, entity_key, body_preview), ${termsOf}
         FROM dead_letters WHERE id BETWEEN $1 AND $2`
      : `INSERT INTO dead_letter_search (dead_letter_id, text)
         SELECT id, dead_letter_search_text_v2(error_type, error_message, entity_key, body_preview) FROM dead_letters WHERE id BETWEEN $1 AND $2`
    const { rows: [bounds] } = await client.query<{ min: string; max: string }>('SELECT min(id)::text AS min, max(id)::text AS max FROM dead_letters')
    let nextId = BigInt(bounds.min ?? '1')
    const lastId = BigInt(bounds.max ?? '0')
    const fillWorker = async () => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try {
        await c.query('SET synchronous_commit = off')
        while (nextId <= lastId) {
          const from = nextId
          nextId = from + BigInt(chunk)
          await c.query(fill, [from.toString(), (nextId - 1n).toString()])
        }
      } finally {
        await c.end()
      }
    }
    await Promise.all(Array.from({ length: jobs }, fillWorker))
    for (const index of searchIndexes) await client.query(index.def)
    phases.push([`search index (dead_letter_search${terms ? (bodyTerms ? ' with header and body terms' : ' with header terms') : ''} and ${searchIndexes.length} GIN indexes)`, ms(t)])

    // Counters exactly as ingestion would have left them, derived from the rows themselves.
    t = performance.now()
    // Per (group, source) first: the group's own counters are their sums and unions. Replayed and resolved counts are
    // what replay and resolve would have counted for the statuses the load drew.
    await client.query(`
      INSERT INTO group_source_stats (group_id, source_id, count, replayed_count, resolved_count, first_seen, last_seen,
        services, service_versions, failure_kinds)
      SELECT d.group_id, d.source_id, count(*), count(*) FILTER (WHERE st.status = 'replayed'), count(*) FILTER (WHERE st.status = 'resolved'),
        min(d.failed_at), max(d.failed_at),
        array_remove(array_agg(DISTINCT d.service ORDER BY d.service), NULL),
        array_remove(array_agg(DISTINCT d.service_version ORDER BY d.service_version), NULL),
        array_agg(DISTINCT d.failure_kind ORDER BY d.failure_kind)
      FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id GROUP BY 1, 2`)
    await client.query(`
      UPDATE error_groups g SET count = a.n, replayed_count = a.replayed, resolved_count = a.resolved, first_seen = a.first_at,
        last_seen = a.last_at, sources = a.sources,
        services = ARRAY(SELECT DISTINCT v FROM group_source_stats x, unnest(x.services) v WHERE x.group_id = g.id ORDER BY 1),
        service_versions = ARRAY(SELECT DISTINCT v FROM group_source_stats x, unnest(x.service_versions) v WHERE x.group_id = g.id ORDER BY 1),
        failure_kinds = ARRAY(SELECT DISTINCT v FROM group_source_stats x, unnest(x.failure_kinds) v WHERE x.group_id = g.id ORDER BY 1)
      FROM (
        SELECT x.group_id, sum(x.count) AS n, sum(x.replayed_count) AS replayed, sum(x.resolved_count) AS resolved,
          min(x.first_seen) AS first_at, max(x.last_seen) AS last_at, array_agg(DISTINCT s.queue ORDER BY s.queue) AS sources
        FROM group_source_stats x JOIN sources s ON s.id = x.source_id GROUP BY x.group_id
      ) a WHERE g.id = a.group_id`)
    await client.query(`
      INSERT INTO group_source_arrivals (group_id, source_id, minute, count)
      SELECT group_id, source_id, date_trunc('minute', failed_at), count(*) FROM dead_letters GROUP BY 1, 2, 3`)
    await client.query(`
      INSERT INTO group_arrivals (group_id, minute, count)
      SELECT group_id, minute, sum(count) FROM group_source_arrivals GROUP BY 1, 2`)
    await client.query(`
      UPDATE sources s SET drained_count = a.n, last_drain_at = a.last_at
      FROM (SELECT source_id, count(*) AS n, max(ingested_at) AS last_at FROM dead_letters GROUP BY 1) a WHERE s.id = a.source_id`)
    phases.push(['error_groups, group_arrivals (and per source), sources counters', ms(t)])

    t = performance.now()
    await client.query('DROP SCHEMA bench CASCADE')
    await client.query('VACUUM (ANALYZE)')
    phases.push(['VACUUM ANALYZE', ms(t)])
    return { groups, groupIds, phases, filled }
  } finally {
    await client.end()
  }
}
