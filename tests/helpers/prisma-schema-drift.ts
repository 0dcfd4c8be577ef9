import { get_dmmf } from '@prisma/prisma-schema-wasm'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { CheckConstraint } from '@/prisma/check-constraints'

/**
 * Compares prisma/schema.prisma with a migrated PostgreSQL database, for tests/integration/prisma-schema-drift.test.ts.
 *
 * The schema side comes from the DMMF of `@prisma/prisma-schema-wasm` (the same WASM `prisma generate` runs, offline):
 * unlike the generated client's runtime model it carries native types, nullability, defaults and every index. The
 * database side comes from pg_catalog. Both are reduced to the same shapes, then compared: tables, columns (native
 * type, nullability, default), primary keys, unique constraints and indexes (columns, order, sort direction, method,
 * operator class, name) and foreign keys (columns, referenced table and columns, ON DELETE, ON UPDATE, name).
 *
 * Not compared, as the schema has no words for them: storage parameters (fillfactor), sequences, functions, triggers
 * and extensions. CHECK constraints, which the schema cannot declare either, are compared with the list beside it,
 * prisma/check-constraints.ts (readCheckConstraints, compareCheckConstraints: that file says why).
 */

/** What PostgreSQL holds that the schema cannot say; each entry is a name and why it lives in SQL only. */
export type Allowances = {
  /** Tables and views without a model. */
  sqlOnlyTables: Record<string, string>
  /**
   * Partial and expression indexes. Prisma cannot describe expressions; its `partialIndexes` preview feature takes a
   * predicate but leaves it out of the DMMF, so nothing here could check it.
   */
  sqlOnlyIndexes: Record<string, string>
  /** Indexes whose key the schema declares but which also INCLUDE columns, which Prisma cannot describe. */
  includeColumns: Record<string, string>
  /** `table.column` of list columns that allow NULL: a Prisma list is never optional, so the schema cannot say it. */
  nullableLists: Record<string, string>
}

// ---------------------------------------------------------------------------------------------------------------
// The DMMF, as far as this comparison reads it (the package ships no types for its output).

type DmmfDefault = string | number | boolean | unknown[] | { name: string; args: unknown[] }
type DmmfField = {
  name: string
  dbName?: string | null
  kind: 'scalar' | 'object' | 'enum' | 'unsupported'
  type: string
  isList: boolean
  isRequired: boolean
  hasDefaultValue: boolean
  default?: DmmfDefault
  nativeType?: [string, string[]] | null
  relationFromFields?: string[]
  relationToFields?: string[]
  relationOnDelete?: string
  relationOnUpdate?: string
}
type DmmfModel = { name: string; dbName: string | null; fields: DmmfField[] }
type DmmfIndex = {
  model: string
  type: 'id' | 'unique' | 'normal' | 'fulltext'
  dbName?: string | null
  algorithm?: string
  fields: { name: string; sortOrder?: 'asc' | 'desc'; operatorClass?: string }[]
}
type Dmmf = { datamodel: { models: DmmfModel[]; enums: { name: string; dbName?: string | null }[]; indexes: DmmfIndex[] } }

// ---------------------------------------------------------------------------------------------------------------
// The shapes both sides are reduced to.

type IndexKind = 'primary key' | 'unique' | 'index'
type IndexColumn = { column: string | null; desc: boolean; opclass: string | null }

type SchemaColumn = { field: string; column: string; prismaType: string; isList: boolean; type: string | { unknown: string }; notNull: boolean; default?: DmmfDefault; fieldType: string }
type SchemaIndex = { name: string; kind: IndexKind; method: string; columns: IndexColumn[]; declared: string }
type SchemaForeignKey = { name: string; relation: string; columns: string[]; referencedTable: string; referencedColumns: string[]; onDelete: string; onUpdate: string }
type SchemaTable = { model: string; table: string; columns: SchemaColumn[]; indexes: SchemaIndex[]; foreignKeys: SchemaForeignKey[] }
export type SchemaSide = { text: string; tables: SchemaTable[] }

type DbColumn = { name: string; type: string; notNull: boolean; identity: boolean; generated: boolean; default: string | null }
type DbIndex = {
  name: string
  kind: IndexKind
  method: string
  columns: (IndexColumn & { nullsFirst: boolean; opclassIsDefault: boolean })[]
  include: string[]
  predicate: string | null
  definition: string
}
type DbForeignKey = { name: string; columns: string[]; referencedTable: string; referencedColumns: string[]; onDelete: string; onUpdate: string }
type DbTable = { name: string; kind: 'table' | 'view'; columns: DbColumn[]; indexes: DbIndex[]; foreignKeys: DbForeignKey[] }
export type DatabaseSide = { tables: Map<string, DbTable> }

// ---------------------------------------------------------------------------------------------------------------
// Reading the schema.

/** Prisma's column type on PostgreSQL for a scalar without @db.* (what `prisma migrate` would create). */
const PRISMA_DEFAULT_TYPES: Record<string, string> = {
  String: 'text',
  Boolean: 'boolean',
  Int: 'integer',
  BigInt: 'bigint',
  Float: 'double precision',
  Decimal: 'numeric(65,30)',
  DateTime: 'timestamp(3) without time zone',
  Json: 'jsonb',
  Bytes: 'bytea',
}

/** @db.* native types as PostgreSQL's format_type() spells them; `args` are the attribute's arguments. */
const NATIVE_TYPES: Record<string, (args: string[]) => string> = {
  Text: () => 'text',
  Char: (a) => `character(${a[0] ?? 1})`,
  VarChar: (a) => (a.length ? `character varying(${a[0]})` : 'character varying'),
  Bit: (a) => `bit(${a[0] ?? 1})`,
  VarBit: (a) => (a.length ? `bit varying(${a[0]})` : 'bit varying'),
  Uuid: () => 'uuid',
  Xml: () => 'xml',
  Inet: () => 'inet',
  Citext: () => 'citext',
  SmallInt: () => 'smallint',
  Integer: () => 'integer',
  BigInt: () => 'bigint',
  Oid: () => 'oid',
  Real: () => 'real',
  DoublePrecision: () => 'double precision',
  Decimal: (a) => (a.length ? `numeric(${a.join(',')})` : 'numeric'),
  Money: () => 'money',
  Timestamp: (a) => (a.length ? `timestamp(${a[0]}) without time zone` : 'timestamp without time zone'),
  Timestamptz: (a) => (a.length ? `timestamp(${a[0]}) with time zone` : 'timestamp with time zone'),
  Date: () => 'date',
  Time: (a) => (a.length ? `time(${a[0]}) without time zone` : 'time without time zone'),
  Timetz: (a) => (a.length ? `time(${a[0]}) with time zone` : 'time with time zone'),
  Boolean: () => 'boolean',
  Json: () => 'json',
  JsonB: () => 'jsonb',
  ByteA: () => 'bytea',
}

/** Prisma's constraint and index names when the schema gives no `map:` (psl's constraint_names, PostgreSQL's 63-byte limit). */
function prismaDefaultName(table: string, columns: string[], suffix: '_pkey' | '_key' | '_idx' | '_fkey'): string {
  const limit = 63 - suffix.length
  const base = suffix === '_pkey' ? table : `${table}_${columns.join('_')}`
  return `${base.length >= limit ? base.slice(0, limit) : base}${suffix}`
}

/** Prisma's operator class names (`JsonbPathOps`) as PostgreSQL's (`jsonb_path_ops`); raw("…") ones are PostgreSQL's already. */
function pgOpclass(prisma: string): string {
  if (!/^[A-Z]/.test(prisma)) return prisma
  return prisma.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().replace('min_max', 'minmax')
}

function renderDefault(value: DmmfDefault | undefined): string {
  if (value === undefined) return 'no default'
  if (Array.isArray(value)) return `@default(${JSON.stringify(value)})`
  if (typeof value === 'object') return `@default(${value.name}(${value.args.map((a) => JSON.stringify(a)).join(', ')}))`
  return `@default(${JSON.stringify(value)})`
}

export function readPrismaSchema(text: string): SchemaSide {
  let dmmf: Dmmf
  try {
    // The WASM takes the schema files as [path, content] pairs wrapped in a JSON parameter object.
    dmmf = JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', text]] }))) as Dmmf
  } catch (error) {
    // Validation errors come back as a JSON string with ANSI colours; keep the message readable in a test report.
    const raw = error instanceof Error ? error.message : String(error)
    let message = raw
    try {
      message = (JSON.parse(raw) as { message: string }).message
    } catch {
      // Not JSON: the raw text is the best there is.
    }
    throw new Error(`prisma/schema.prisma does not validate:\n${message.replace(/\x1b\[[0-9;]*m/g, '')}`)
  }
  const { models, enums, indexes } = dmmf.datamodel
  const tableOf = new Map(models.map((m) => [m.name, m.dbName ?? m.name]))
  const columnOf = (model: DmmfModel | undefined, field: string) => {
    const f = model?.fields.find((x) => x.name === field)
    return f?.dbName ?? field
  }
  const modelByName = new Map(models.map((m) => [m.name, m]))

  const tables = models.map((model): SchemaTable => {
    const table = model.dbName ?? model.name
    const columns = model.fields
      .filter((f) => f.kind === 'scalar' || f.kind === 'enum')
      .map((f): SchemaColumn => {
        let type: SchemaColumn['type']
        if (f.kind === 'enum') {
          const e = enums.find((x) => x.name === f.type)
          type = e?.dbName ?? f.type
        } else if (f.nativeType) {
          const [name, args] = f.nativeType
          const render = NATIVE_TYPES[name]
          type = render ? render(args) : { unknown: `@db.${name}` }
        } else {
          type = PRISMA_DEFAULT_TYPES[f.type] ?? { unknown: f.type }
        }
        if (f.isList && typeof type === 'string') type = `${type}[]`
        const fieldType = `${f.type}${f.isList ? '[]' : f.isRequired ? '' : '?'}${f.nativeType ? ` @db.${f.nativeType[0]}${f.nativeType[1].length ? `(${f.nativeType[1].join(', ')})` : ''}` : ''}`
        return { field: f.name, column: f.dbName ?? f.name, prismaType: f.type, isList: f.isList, type, notNull: f.isRequired, default: f.hasDefaultValue ? f.default : undefined, fieldType }
      })

    const schemaIndexes = indexes
      .filter((i) => i.model === model.name && i.type !== 'fulltext')
      .map((i): SchemaIndex => {
        const kind: IndexKind = i.type === 'id' ? 'primary key' : i.type === 'unique' ? 'unique' : 'index'
        const cols = i.fields.map((f) => columnOf(model, f.name))
        const suffix = kind === 'primary key' ? '_pkey' : kind === 'unique' ? '_key' : '_idx'
        const attribute = kind === 'primary key' ? '@@id' : kind === 'unique' ? '@@unique' : '@@index'
        const fieldList = i.fields.map((f) => `${f.name}${f.sortOrder === 'desc' ? '(sort: Desc)' : ''}`).join(', ')
        return {
          name: i.dbName ?? prismaDefaultName(table, cols, suffix),
          kind,
          method: (i.algorithm ?? 'BTree').toLowerCase(),
          columns: i.fields.map((f, n) => ({ column: cols[n], desc: f.sortOrder === 'desc', opclass: f.operatorClass ? pgOpclass(f.operatorClass) : null })),
          declared: `${attribute}([${fieldList}])${i.algorithm ? `, type: ${i.algorithm}` : ''}`,
        }
      })

    const foreignKeys = model.fields
      .filter((f) => f.kind === 'object' && (f.relationFromFields?.length ?? 0) > 0)
      .map((f): SchemaForeignKey => {
        const columns = f.relationFromFields!.map((x) => columnOf(model, x))
        const target = modelByName.get(f.type)
        return {
          // `map:` on @relation is not in the DMMF, so only Prisma's default name can be expected.
          name: prismaDefaultName(table, columns, '_fkey'),
          relation: `${model.name}.${f.name}`,
          columns,
          referencedTable: tableOf.get(f.type) ?? f.type,
          referencedColumns: (f.relationToFields ?? []).map((x) => columnOf(target, x)),
          // Prisma's defaults when the relation does not say (its referential actions documentation).
          onDelete: f.relationOnDelete ?? (f.isRequired ? 'Restrict' : 'SetNull'),
          onUpdate: f.relationOnUpdate ?? 'Cascade',
        }
      })

    return { model: model.name, table, columns, indexes: schemaIndexes, foreignKeys }
  })
  return { text, tables }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the database.

const ACTIONS: Record<string, string> = { a: 'NoAction', r: 'Restrict', c: 'Cascade', n: 'SetNull', d: 'SetDefault' }

/** The tables, views, columns, indexes and foreign keys of the current schema, from pg_catalog. */
export async function readDatabase(sql: Sql): Promise<DatabaseSide> {
  const tables = new Map<string, DbTable>()
  const { rows: relations } = await sql.query<{ name: string; relkind: string }>(
    `SELECT c.relname AS name, c.relkind::text AS relkind
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`,
  )
  for (const r of relations) tables.set(r.name, { name: r.name, kind: r.relkind === 'v' || r.relkind === 'm' ? 'view' : 'table', columns: [], indexes: [], foreignKeys: [] })

  const { rows: columns } = await sql.query<{ table: string; name: string; type: string; not_null: boolean; identity: string; generated: string; default: string | null }>(
    `SELECT c.relname AS table, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
       a.attidentity::text AS identity, a.attgenerated::text AS generated, pg_get_expr(d.adbin, d.adrelid) AS default
     FROM pg_attribute a
     JOIN pg_class c ON c.oid = a.attrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY c.relname, a.attnum`,
  )
  for (const c of columns) {
    tables.get(c.table)!.columns.push({ name: c.name, type: c.type, notNull: c.not_null, identity: c.identity !== '', generated: c.generated !== '', default: c.default })
  }

  const { rows: indexes } = await sql.query<{
    table: string; name: string; primary: boolean; unique: boolean; method: string; key_count: number; predicate: string | null; definition: string
    columns: { column: string | null; opt: number | null; opclass: string | null; opclass_default: boolean | null }[]
  }>(
    `SELECT t.relname AS table, i.relname AS name, x.indisprimary AS primary, x.indisunique AS unique, am.amname AS method,
       x.indnkeyatts AS key_count, pg_get_expr(x.indpred, x.indrelid) AS predicate, pg_get_indexdef(x.indexrelid) AS definition,
       (SELECT json_agg(json_build_object('column', a.attname, 'opt', k.opt, 'opclass', oc.opcname, 'opclass_default', oc.opcdefault) ORDER BY k.ord)
        FROM unnest(x.indkey::int2[], x.indclass::oid[], x.indoption::int2[]) WITH ORDINALITY AS k(attnum, opclass, opt, ord)
        LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum AND k.attnum > 0
        LEFT JOIN pg_opclass oc ON oc.oid = k.opclass) AS columns
     FROM pg_index x
     JOIN pg_class i ON i.oid = x.indexrelid
     JOIN pg_class t ON t.oid = x.indrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace
     JOIN pg_am am ON am.oid = i.relam
     WHERE n.nspname = current_schema()
     ORDER BY t.relname, i.relname`,
  )
  for (const x of indexes) {
    const key = x.columns.slice(0, x.key_count)
    tables.get(x.table)!.indexes.push({
      name: x.name,
      kind: x.primary ? 'primary key' : x.unique ? 'unique' : 'index',
      method: x.method,
      // indoption bit 1: DESC; bit 2: NULLS FIRST. A null column is an expression.
      columns: key.map((k) => ({ column: k.column, desc: ((k.opt ?? 0) & 1) === 1, nullsFirst: ((k.opt ?? 0) & 2) === 2, opclass: k.opclass, opclassIsDefault: k.opclass_default ?? true })),
      include: x.columns.slice(x.key_count).map((k) => k.column ?? '(expression)'),
      predicate: x.predicate,
      definition: x.definition,
    })
  }

  const { rows: foreignKeys } = await sql.query<{ table: string; name: string; columns: string[]; referenced_table: string; referenced_columns: string[]; on_delete: string; on_update: string }>(
    `SELECT t.relname AS table, con.conname AS name, r.relname AS referenced_table,
       ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord) AS columns,
       ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord) AS referenced_columns,
       con.confdeltype::text AS on_delete, con.confupdtype::text AS on_update
     FROM pg_constraint con
     JOIN pg_class t ON t.oid = con.conrelid
     JOIN pg_class r ON r.oid = con.confrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = current_schema() AND con.contype = 'f'
     ORDER BY t.relname, con.conname`,
  )
  for (const f of foreignKeys) {
    tables.get(f.table)!.foreignKeys.push({
      name: f.name,
      columns: f.columns,
      referencedTable: f.referenced_table,
      referencedColumns: f.referenced_columns,
      onDelete: ACTIONS[f.on_delete] ?? f.on_delete,
      onUpdate: ACTIONS[f.on_update] ?? f.on_update,
    })
  }
  return { tables }
}

// ---------------------------------------------------------------------------------------------------------------
// Defaults: PostgreSQL keeps an expression (`'{}'::text[]`, `now()`, `nextval(…)`), the DMMF a value.

type SqlDefault = { kind: 'none' } | { kind: 'autoincrement' } | { kind: 'now' } | { kind: 'literal'; value: string } | { kind: 'expression'; text: string }

function parseSqlDefault(column: DbColumn): SqlDefault {
  if (column.identity) return { kind: 'autoincrement' }
  if (column.default === null) return { kind: 'none' }
  let text = column.default.trim()
  while (text.startsWith('(') && text.endsWith(')')) text = text.slice(1, -1).trim()
  if (/^nextval\(/.test(text)) return { kind: 'autoincrement' }
  if (/^(now\(\)|CURRENT_TIMESTAMP|transaction_timestamp\(\))$/i.test(text)) return { kind: 'now' }
  const cast = String.raw`(::[a-z][a-z0-9_ ]*(\(\d+(,\d+)?\))?(\[\])?)*`
  const quoted = new RegExp(`^'((?:[^']|'')*)'${cast}$`, 's').exec(text)
  if (quoted) return { kind: 'literal', value: quoted[1].replace(/''/g, "'") }
  const bare = new RegExp(`^\\(?(-?\\d+(?:\\.\\d+)?|true|false)\\)?${cast}$`).exec(text)
  if (bare) return { kind: 'literal', value: bare[1] }
  return { kind: 'expression', text }
}

/** A one-dimensional PostgreSQL array literal (`{a,"b c"}`) as its elements. */
function parsePgArray(literal: string): string[] | null {
  if (!literal.startsWith('{') || !literal.endsWith('}')) return null
  const body = literal.slice(1, -1)
  if (body === '') return []
  const out: string[] = []
  let i = 0
  while (i <= body.length) {
    let value = ''
    if (body[i] === '"') {
      i++
      while (i < body.length && body[i] !== '"') {
        if (body[i] === '\\') i++
        value += body[i++]
      }
      i++
    } else {
      while (i < body.length && body[i] !== ',') value += body[i++]
    }
    out.push(value)
    i++ // the comma
  }
  return out
}

const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

const CLIENT_SIDE_DEFAULTS = new Set(['uuid', 'cuid', 'nanoid', 'ulid'])

/** Whether the column's SQL default is the one the schema declares. */
function sameDefault(schema: SchemaColumn, column: DbColumn): boolean {
  const expected = schema.default
  const sql = parseSqlDefault(column)
  // uuid(), cuid(), … are filled in by the client: the column itself has no default.
  if (expected === undefined || (typeof expected === 'object' && !Array.isArray(expected) && CLIENT_SIDE_DEFAULTS.has(expected.name))) return sql.kind === 'none'
  if (typeof expected === 'object' && !Array.isArray(expected)) {
    if (expected.name === 'autoincrement') return sql.kind === 'autoincrement'
    if (expected.name === 'now') return sql.kind === 'now'
    // dbgenerated("…") must be spelled as PostgreSQL prints the expression back (pg_get_expr).
    if (expected.name === 'dbgenerated') return !column.identity && String(expected.args[0]) === column.default
    return false
  }
  if (sql.kind !== 'literal') return false
  if (Array.isArray(expected)) {
    const elements = parsePgArray(sql.value)
    return elements !== null && canonicalJson(elements) === canonicalJson(expected.map(String))
  }
  switch (schema.prismaType) {
    case 'Json':
      try {
        return canonicalJson(JSON.parse(String(expected))) === canonicalJson(JSON.parse(sql.value))
      } catch {
        return false
      }
    case 'Int': case 'BigInt': case 'Float': case 'Decimal':
      return Number(expected) === Number(sql.value)
    case 'DateTime':
      return Date.parse(String(expected)) === Date.parse(sql.value)
    default:
      return String(expected) === sql.value
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The comparison.

const describeIndexColumns = (columns: IndexColumn[]) =>
  `(${columns.map((c) => `${c.column ?? '(expression)'}${c.desc ? ' DESC' : ''}${c.opclass ? ` ${c.opclass}` : ''}`).join(', ')})`

/** Every difference between the schema and the database, one readable line each; empty when they agree. */
export function compareSchema(schema: SchemaSide, database: DatabaseSide, allow: Allowances): string[] {
  const out: string[] = []
  const modelTables = new Map(schema.tables.map((t) => [t.table, t]))

  // Tables.
  for (const t of schema.tables) {
    const db = database.tables.get(t.table)
    if (!db) out.push(`model ${t.model}: no table "${t.table}" in the migrated database`)
    else if (db.kind === 'view') out.push(`model ${t.model}: "${t.table}" is a view in SQL; a model describes a table`)
  }
  for (const db of database.tables.values()) {
    if (modelTables.has(db.name)) {
      if (allow.sqlOnlyTables[db.name]) out.push(`sqlOnlyTables lists "${db.name}", but model ${modelTables.get(db.name)!.model} maps to it: remove the entry`)
      continue
    }
    if (!allow.sqlOnlyTables[db.name]) out.push(`${db.kind} "${db.name}": in the migrations, but no model maps to it (add a model, or list it in sqlOnlyTables with the reason)`)
  }
  for (const name of Object.keys(allow.sqlOnlyTables)) {
    if (!database.tables.has(name)) out.push(`sqlOnlyTables lists "${name}", which the migrations do not create: remove the entry`)
  }

  const dbIndexNames = new Set<string>()
  for (const t of schema.tables) {
    const db = database.tables.get(t.table)
    if (!db || db.kind === 'view') continue

    // Columns.
    const dbColumns = new Map(db.columns.map((c) => [c.name, c]))
    for (const c of t.columns) {
      const where = `${t.table}.${c.column} (${t.model}.${c.field})`
      const dc = dbColumns.get(c.column)
      if (!dc) {
        out.push(`${where}: no such column in SQL`)
        continue
      }
      if (typeof c.type !== 'string') out.push(`${where}: the test does not know the PostgreSQL type of ${c.type.unknown}; teach tests/helpers/prisma-schema-drift.ts`)
      else if (c.type !== dc.type) out.push(`${where}: type: schema ${c.type} (${c.fieldType}), SQL ${dc.type}`)
      const listMayBeNull = c.isList && allow.nullableLists[`${t.table}.${c.column}`] !== undefined
      if (c.isList && listMayBeNull && dc.notNull) out.push(`nullableLists lists ${t.table}.${c.column}, which is NOT NULL in SQL: remove the entry`)
      else if (c.isList && !listMayBeNull && !dc.notNull) {
        out.push(`${where}: nullability: a Prisma list is never null, SQL allows NULL (make the column NOT NULL in a migration, or list it in nullableLists with the reason)`)
      } else if (!c.isList && c.notNull !== dc.notNull) {
        out.push(`${where}: nullability: schema ${c.notNull ? 'required' : 'optional'} (${c.fieldType}), SQL ${dc.notNull ? 'NOT NULL' : 'allows NULL'}`)
      }
      if (dc.generated) out.push(`${where}: a generated column in SQL (${dc.default}), which the schema cannot describe`)
      else if (!sameDefault(c, dc)) {
        out.push(`${where}: default: schema ${renderDefault(c.default)}, SQL ${dc.identity ? 'GENERATED AS IDENTITY' : dc.default ?? 'no default'}`)
      }
    }
    const fieldColumns = new Set(t.columns.map((c) => c.column))
    for (const dc of db.columns) {
      if (!fieldColumns.has(dc.name)) out.push(`${t.table}.${dc.name}: column in SQL (${dc.type}${dc.notNull ? ' NOT NULL' : ''}), but no field of model ${t.model} maps to it`)
    }

    // Primary keys, unique constraints and indexes, matched by name.
    const dbIndexes = new Map(db.indexes.map((i) => [i.name, i]))
    for (const i of db.indexes) dbIndexNames.add(i.name)
    for (const si of t.indexes) {
      const where = `${t.table}: ${si.kind} "${si.name}" (${si.declared})`
      const di = dbIndexes.get(si.name)
      if (allow.sqlOnlyIndexes[si.name]) out.push(`sqlOnlyIndexes lists "${si.name}", which the schema declares: remove the entry`)
      if (!di) {
        const sameKey = db.indexes.find((x) => describeIndexColumns(x.columns) === describeIndexColumns(si.columns))
        out.push(`${where}: not in SQL${sameKey ? `; SQL has "${sameKey.name}" on the same columns (${sameKey.definition})` : ''}`)
        continue
      }
      if (di.predicate !== null || di.columns.some((c) => c.column === null)) {
        out.push(`${where}: declared in the schema, but in SQL it is ${di.predicate !== null ? 'partial' : 'on an expression'} (${di.definition}), which the schema cannot describe: remove it from the schema, mention it in a schema comment and list it in sqlOnlyIndexes`)
        continue
      }
      if (si.kind !== di.kind) out.push(`${where}: kind: schema ${si.kind}, SQL ${di.kind} (${di.definition})`)
      if (si.method !== di.method) out.push(`${where}: method: schema ${si.method}, SQL ${di.method} (${di.definition})`)
      const sqlColumns: IndexColumn[] = di.columns.map((c) => ({ column: c.column, desc: c.desc, opclass: c.opclassIsDefault ? null : c.opclass }))
      if (describeIndexColumns(si.columns) !== describeIndexColumns(sqlColumns)) {
        out.push(`${where}: columns: schema ${describeIndexColumns(si.columns)}, SQL ${describeIndexColumns(sqlColumns)}`)
      }
      // PostgreSQL's default: NULLS FIRST for DESC, NULLS LAST for ASC; the schema cannot ask for the other.
      if (di.columns.some((c) => c.nullsFirst !== c.desc)) out.push(`${where}: SQL sets NULLS FIRST/LAST against the default (${di.definition}), which the schema cannot describe`)
      if (di.include.length > 0 && !allow.includeColumns[di.name]) {
        out.push(`${where}: SQL also INCLUDEs (${di.include.join(', ')}), which the schema cannot describe: mention it in a schema comment and list it in includeColumns`)
      }
      if (di.include.length === 0 && allow.includeColumns[di.name]) out.push(`includeColumns lists "${di.name}", which INCLUDEs no columns in SQL: remove the entry`)
    }
    const schemaIndexNames = new Set(t.indexes.map((i) => i.name))
    for (const di of db.indexes) {
      if (schemaIndexNames.has(di.name)) continue
      const inexpressible = di.predicate !== null || di.columns.some((c) => c.column === null)
      if (allow.sqlOnlyIndexes[di.name]) {
        if (!inexpressible) out.push(`sqlOnlyIndexes lists "${di.name}", but the schema can describe it (${di.definition}): declare it in the schema and remove the entry`)
        continue
      }
      const hint = inexpressible
        ? `; it is ${di.predicate !== null ? 'partial' : 'on an expression'}, which the schema cannot describe: mention it in a schema comment and list it in sqlOnlyIndexes`
        : ''
      out.push(`${t.table}: ${di.kind} "${di.name}" in SQL (${di.definition}), but not in the schema${hint}`)
    }

    // Foreign keys, matched by their columns.
    const dbForeignKeys = new Map(db.foreignKeys.map((f) => [f.columns.join(','), f]))
    for (const sf of t.foreignKeys) {
      const where = `${t.table}(${sf.columns.join(', ')}) → ${sf.referencedTable} (relation ${sf.relation})`
      const df = dbForeignKeys.get(sf.columns.join(','))
      dbForeignKeys.delete(sf.columns.join(','))
      if (!df) {
        out.push(`${where}: the schema's relation makes a foreign key, SQL has none`)
        continue
      }
      if (df.referencedTable !== sf.referencedTable || df.referencedColumns.join(',') !== sf.referencedColumns.join(',')) {
        out.push(`${where}: references: schema ${sf.referencedTable}(${sf.referencedColumns.join(', ')}), SQL ${df.referencedTable}(${df.referencedColumns.join(', ')})`)
      }
      if (df.onDelete !== sf.onDelete) out.push(`${where}: onDelete: schema ${sf.onDelete}, SQL ${df.onDelete}`)
      if (df.onUpdate !== sf.onUpdate) out.push(`${where}: onUpdate: schema ${sf.onUpdate}, SQL ${df.onUpdate}`)
      if (df.name !== sf.name) out.push(`${where}: name: Prisma's default ${sf.name}, SQL ${df.name} (the DMMF does not carry @relation(map:), so only the default name can be checked)`)
    }
    for (const df of dbForeignKeys.values()) {
      out.push(`${t.table}(${df.columns.join(', ')}) → ${df.referencedTable}(${df.referencedColumns.join(', ')}): foreign key "${df.name}" (ON DELETE ${df.onDelete}) in SQL, but no relation in model ${t.model}`)
    }
  }

  for (const key of Object.keys(allow.nullableLists)) {
    const [table, column] = key.split('.')
    const t = modelTables.get(table)
    if (!t?.columns.some((c) => c.column === column && c.isList)) out.push(`nullableLists lists ${key}, which is not a list column of any model: remove the entry`)
  }
  for (const name of [...Object.keys(allow.sqlOnlyIndexes), ...Object.keys(allow.includeColumns)]) {
    if (!dbIndexNames.has(name)) out.push(`the allow-list names index "${name}", which the migrations do not create: remove the entry`)
  }
  // An exception the test accepts is one a reader of the schema should learn of too.
  for (const name of [...Object.keys(allow.sqlOnlyTables), ...Object.keys(allow.sqlOnlyIndexes), ...Object.keys(allow.includeColumns)]) {
    if (!schema.text.includes(name)) out.push(`"${name}" is allow-listed but prisma/schema.prisma does not mention it: say in a schema comment what SQL holds there`)
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// CHECK constraints, against prisma/check-constraints.ts.

export type DbCheck = { name: string; table: string; definition: string }

/** Every CHECK constraint of the current schema, with PostgreSQL's text of its condition. */
export async function readCheckConstraints(sql: Sql): Promise<DbCheck[]> {
  const { rows } = await sql.query<DbCheck>(
    `SELECT con.conname AS name, t.relname AS table, pg_get_constraintdef(con.oid) AS definition
     FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = current_schema() AND con.contype = 'c'
     ORDER BY t.relname, con.conname`,
  )
  return rows
}

/**
 * The column and values of a `column IN ('a', 'b')` CHECK as PostgreSQL prints it back
 * (`CHECK ((status = ANY (ARRAY['a'::text, 'b'::text])))`); null for any other condition.
 */
export function parseValueList(definition: string): { column: string; values: string[] } | null {
  const m = /^CHECK \(\((\w+) = ANY \(ARRAY\[(.*)\]\)\)\)$/.exec(definition)
  if (!m) return null
  const values = m[2].split(', ').map((v) => /^'((?:[^']|'')*)'::text$/.exec(v)?.[1].replaceAll("''", "'"))
  return values.every((v) => v !== undefined) ? { column: m[1], values: values as string[] } : null
}

const quoteAll = (values: string[]) => values.map((v) => `'${v}'`).join(', ')

/** The differences between the listed CHECK constraints and the database's, one line each, naming the constraint. */
export function compareCheckConstraints(listed: Record<string, CheckConstraint>, database: DbCheck[]): string[] {
  const out: string[] = []
  const file = 'prisma/check-constraints.ts'
  for (const db of database) {
    const entry = listed[db.name]
    if (!entry) {
      out.push(`CHECK "${db.name}" on ${db.table} in SQL (${db.definition}), but not listed in ${file}`)
      continue
    }
    if (entry.table !== db.table) out.push(`CHECK "${db.name}": on ${db.table} in SQL, listed in ${file} on ${entry.table}`)
    if ('check' in entry) {
      if (entry.check !== db.definition) out.push(`CHECK "${db.name}" on ${db.table}: SQL ${db.definition}, ${file} ${entry.check}`)
      continue
    }
    const list = parseValueList(db.definition)
    if (!list || list.column !== entry.column) {
      out.push(`CHECK "${db.name}" on ${db.table}: ${file} lists the values of ${entry.column}, but SQL says ${db.definition}`)
      continue
    }
    const onlySql = list.values.filter((v) => !entry.oneOf.includes(v))
    const onlyListed = entry.oneOf.filter((v) => !list.values.includes(v))
    if (onlySql.length > 0 || onlyListed.length > 0) {
      const parts = [
        onlySql.length > 0 ? `SQL allows ${quoteAll(onlySql)}, which ${entry.source} does not name` : null,
        onlyListed.length > 0 ? `${entry.source} names ${quoteAll(onlyListed)}, which SQL does not allow` : null,
      ]
      out.push(`CHECK "${db.name}" on ${db.table}.${entry.column}: ${parts.filter(Boolean).join('; ')}`)
    }
  }
  const names = new Set(database.map((c) => c.name))
  for (const [name, entry] of Object.entries(listed)) {
    if (!names.has(name)) out.push(`CHECK "${name}" on ${entry.table} is listed in ${file}, but the migrations do not create it`)
  }
  return out
}
