import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHECK_CONSTRAINTS } from '@/prisma/check-constraints'
import { compareCheckConstraints, compareSchema, readCheckConstraints, readDatabase, readPrismaSchema, type Allowances, type DatabaseSide, type DbCheck } from '../helpers/prisma-schema-drift'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * The SQL migrations are the record of the schema (they are what runs); prisma/schema.prisma must describe the same
 * database, because it types the Prisma client and is what anyone reads to learn the tables. Nothing else keeps the
 * two in step (the Prisma CLI cannot diff them on our machines), so this test migrates a fresh database and compares
 * it with the schema's DMMF: tables, columns, native types, nullability, defaults, keys, indexes and foreign keys.
 * The schema cannot declare CHECK constraints; they are compared with prisma/check-constraints.ts, which says why.
 *
 * A difference means the schema is wrong (fix prisma/schema.prisma, then `npm run db:generate`), unless the SQL is:
 * then a new migration fixes it, never an edit of an applied one.
 */

const SCHEMA_PATH = path.resolve(import.meta.dirname, '../../prisma/schema.prisma')

/** What the migrations create that the schema cannot describe, and why. Each is named in a schema comment too (checked for tables and indexes). */
const ALLOWANCES: Allowances = {
  sqlOnlyTables: {
    _lazarus_migrations: 'the migration runner\'s own ledger (lib/server/platform/db/migrate.ts), created before any migration runs',
    message_statuses: 'a view for ad-hoc SQL and reports (every message with its status); the application joins dead_letter_states itself',
  },
  sqlOnlyIndexes: {
    dead_letters_service_idx: 'partial: WHERE service IS NOT NULL',
    topology_findings_open_idx: 'partial: WHERE resolved_at IS NULL',
    dead_letters_entity_idx: 'partial: WHERE entity_key IS NOT NULL',
    dead_letters_lineage_idx: 'partial: WHERE lineage_origin_id IS NOT NULL',
    dead_letters_held_from_idx: 'partial: WHERE held_from IS NOT NULL',
    dead_letters_trace_idx: 'partial: WHERE trace_id IS NOT NULL',
    dead_letter_states_status_idx: "partial: WHERE status <> 'dead'",
    dead_letter_states_retention_idx: "partial: WHERE status IN ('replayed', 'resolved')",
    dead_letter_states_held_idx: "partial: WHERE status = 'held'",
    replay_jobs_active_idx: "partial: WHERE status IN ('pending', 'running')",
    replay_jobs_halted_idx: "partial: WHERE status = 'halted'",
    dead_letters_lineage_replay_idx: 'partial: WHERE lineage_replay_id IS NOT NULL',
    replay_jobs_waiting_idx: "partial: WHERE status IN ('awaiting_approval', 'scheduled')",
    pauses_active_key: "unique over coalesce(entity_key, ''), partial: WHERE status <> 'resumed'",
    pauses_job_idx: 'partial: WHERE replay_job_id IS NOT NULL',
    alert_events_delivery_idx: 'partial: WHERE next_delivery_at IS NOT NULL',
    users_email_key: 'unique over lower(email): addresses are unique whatever their letter case',
    role_bindings_unique_idx: "unique over coalesce(source_pattern, ''): a NULL pattern (every source) counts once",
    sign_in_attempts_email_idx: 'over lower(email), as the brute-force limit counts attempts per account',
  },
  includeColumns: {
    group_arrivals_pkey: 'INCLUDE (count): reads of the arrival buckets are index-only scans',
    group_source_arrivals_pkey: 'INCLUDE (count): reads of the per-source buckets are index-only scans',
    dead_letters_group_idx: "INCLUDE (source_id, failure_kind, service, service_version): a group's breakdown is an index-only scan",
  },
  nullableLists: {
    'dead_letters.origin_routing_keys': 'nullable since the first migration; ingestion writes [] without x-death, and readers take NULL as []',
    'replay_jobs.source_ids': 'NULL for release jobs, which only unlimited users see',
    'replay_jobs.stage_bounds': 'NULL for an unstaged job',
    'replay_jobs.group_ids': 'NULL until the job is created (release jobs keep it NULL)',
  },
}

describe('prisma/schema.prisma and the SQL migrations', () => {
  let db: TestDb
  let database: DatabaseSide
  let checks: DbCheck[]

  beforeAll(async () => {
    db = await createTestDb('lazarus_drift')
    database = await readDatabase(db.sql)
    checks = await readCheckConstraints(db.sql)
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('describe the same database', () => {
    const differences = compareSchema(readPrismaSchema(readFileSync(SCHEMA_PATH, 'utf8')), database, ALLOWANCES)
    const report = [
      `prisma/schema.prisma does not describe the migrated database (${differences.length} difference${differences.length === 1 ? '' : 's'}):`,
      ...differences.map((d) => `  - ${d}`),
      'The migrations are the record: fix the schema and run `npm run db:generate` (or, if the SQL is wrong, add a migration).',
    ].join('\n')
    expect(differences.length, report).toBe(0)
  })

  it('create exactly the CHECK constraints prisma/check-constraints.ts lists', () => {
    const differences = compareCheckConstraints(CHECK_CONSTRAINTS, checks)
    const report = [
      `prisma/check-constraints.ts does not match the migrated database's CHECK constraints (${differences.length}):`,
      ...differences.map((d) => `  - ${d}`),
      'Update the list with the migration that changed them (or, if the SQL is wrong, add a migration).',
    ].join('\n')
    expect(differences.length, report).toBe(0)
    expect(checks.length).toBe(Object.keys(CHECK_CONSTRAINTS).length)
  })

  it('reports CHECK constraints that drifted, by name', async () => {
    const rollback = new Error('rollback')
    let drifted: DbCheck[] = []
    await expect(
      db.sql.transaction(async (tx) => {
        await tx.exec(`
          ALTER TABLE replay_jobs DROP CONSTRAINT replay_jobs_status_check;
          ALTER TABLE replay_jobs ADD CONSTRAINT replay_jobs_status_check CHECK (status IN ('pending', 'running', 'completed', 'cancelled', 'failed', 'halted', 'awaiting_approval', 'scheduled', 'rejected', 'archived'));
          ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_window_minutes_check;
          ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_window_minutes_check CHECK (window_minutes BETWEEN 1 AND 60);
          ALTER TABLE sessions DROP CONSTRAINT sessions_method_check;
          ALTER TABLE sessions ADD CONSTRAINT sessions_method_check CHECK (method <> 'proxy');
          ALTER TABLE sources DROP CONSTRAINT sources_kind_check;
          ALTER TABLE users ADD CONSTRAINT users_email_check CHECK (email <> '');`)
        drifted = await readCheckConstraints(tx)
        throw rollback
      }),
    ).rejects.toBe(rollback)
    expect(compareCheckConstraints(CHECK_CONSTRAINTS, drifted).sort()).toEqual([
      `CHECK "alert_rules_window_minutes_check" on alert_rules: SQL CHECK (((window_minutes >= 1) AND (window_minutes <= 60))), prisma/check-constraints.ts CHECK (((window_minutes >= 1) AND (window_minutes <= 1440)))`,
      `CHECK "replay_jobs_status_check" on replay_jobs.status: SQL allows 'archived', which REPLAY_JOB_STATUSES (lib/shared/replay-job-machine.ts) does not name; REPLAY_JOB_STATUSES (lib/shared/replay-job-machine.ts) names 'expired', which SQL does not allow`,
      `CHECK "sessions_method_check" on sessions: prisma/check-constraints.ts lists the values of method, but SQL says CHECK ((method <> 'proxy'::text))`,
      'CHECK "sources_kind_check" on sources is listed in prisma/check-constraints.ts, but the migrations do not create it',
      `CHECK "users_email_check" on users in SQL (CHECK ((email <> ''::text))), but not listed in prisma/check-constraints.ts`,
    ])
  })

  // The comparison must see drift in each thing it compares; a reader that compared nothing would pass the test above.
  it('reports a schema that drifted from the migrations, line by line', () => {
    const original = readFileSync(SCHEMA_PATH, 'utf8')
    const edits: [RegExp, string][] = [
      [/(lastError\s+)String\?(\s+@map\("last_error"\))/, '$1Int?$2'], // type
      [/(\n\s+queue\s+)String(\n)/, '$1String?$2'], // nullability (the first `queue`: Source)
      [/(orderSensitive\s+Boolean\s+)@default\(false\)/, '$1@default(true)'], // default
      [/@@index\(\[sourceId, groupId\], map: "group_source_stats_source_idx"\)/, '@@index([groupId, sourceId], map: "group_source_stats_source_idx")'], // index columns
      [/(job\s+ReplayJob\s+@relation\(fields: \[jobId\], references: \[id\], onDelete: )Cascade/, '$1Restrict'], // onDelete
      [/@@map\("oidc_flows"\)/, '@@map("oidc_flow")'], // table name
    ]
    let drifted = original
    for (const [pattern, replacement] of edits) {
      const next = drifted.replace(pattern, replacement)
      expect(next, `the schema no longer contains ${pattern}: update this test's edits`).not.toBe(drifted)
      drifted = next
    }
    const differences = compareSchema(readPrismaSchema(drifted), database, ALLOWANCES)
    expect(differences).toEqual(
      expect.arrayContaining([
        'sources.last_error (Source.lastError): type: schema integer (Int?), SQL text',
        'sources.queue (Source.queue): nullability: schema optional (String?), SQL NOT NULL',
        'sources.order_sensitive (Source.orderSensitive): default: schema @default(true), SQL false',
        'group_source_stats: index "group_source_stats_source_idx" (@@index([groupId, sourceId])): columns: schema (group_id, source_id), SQL (source_id, group_id)',
        expect.stringMatching(/^replay_items\(job_id\) → replay_jobs .*onDelete: schema Restrict, SQL Cascade$/),
        'model OidcFlow: no table "oidc_flow" in the migrated database',
        expect.stringMatching(/^table "oidc_flows": in the migrations, but no model maps to it/),
      ]),
    )
    expect(differences).toHaveLength(7)
  })

  it('reports migrations that drifted from the schema, line by line', async () => {
    // DDL is transactional in PostgreSQL: the changes are read inside the transaction, then rolled back.
    const rollback = new Error('rollback')
    let drifted: DatabaseSide | undefined
    await expect(
      db.sql.transaction(async (tx) => {
        await tx.exec(`
          ALTER TABLE sources ADD COLUMN region text;
          ALTER TABLE sign_in_attempts ALTER COLUMN ip DROP NOT NULL;
          ALTER TABLE users ALTER COLUMN created_at DROP DEFAULT;
          ALTER TABLE alert_rules ALTER COLUMN window_minutes TYPE bigint;
          CREATE INDEX audit_log_actor_idx ON audit_log (actor);
          ALTER TABLE replay_items DROP CONSTRAINT replay_items_job_id_fkey;
          CREATE TABLE stray (id integer);`)
        drifted = await readDatabase(tx)
        throw rollback
      }),
    ).rejects.toBe(rollback)
    const differences = compareSchema(readPrismaSchema(readFileSync(SCHEMA_PATH, 'utf8')), drifted!, ALLOWANCES)
    expect(differences).toEqual(
      expect.arrayContaining([
        'sources.region: column in SQL (text), but no field of model Source maps to it',
        'sign_in_attempts.ip (SignInAttempt.ip): nullability: schema required (String), SQL allows NULL',
        'users.created_at (User.createdAt): default: schema @default(now()), SQL no default',
        'alert_rules.window_minutes (AlertRule.windowMinutes): type: schema integer (Int), SQL bigint',
        'audit_log: index "audit_log_actor_idx" in SQL (CREATE INDEX audit_log_actor_idx ON public.audit_log USING btree (actor)), but not in the schema',
        expect.stringMatching(/^replay_items\(job_id\) → replay_jobs \(relation ReplayItem\.job\): the schema's relation makes a foreign key, SQL has none$/),
        expect.stringMatching(/^table "stray": in the migrations, but no model maps to it/),
      ]),
    )
    expect(differences).toHaveLength(7)
  })
})
