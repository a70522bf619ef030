/**
 * The cluster's shared state, in one SQL database every node names (Postgres, or one SQLite file for nodes on
 * one machine): the hosts and their leases, where each agent lives (its placement), the agents' conversations
 * mirrored from the CLI's session files, and the fleet-wide report log. `@effect/cluster` keeps its runners and
 * shard locks in the same database. Times are the database's, so the nodes' clocks never have to agree.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { AgentOptions, type DataOptions } from "@flotta/core/AgentOptions"
import * as AgentView from "@flotta/core/AgentView"
import { StoreUnavailable } from "@flotta/core/Errors"
import type { ReportEntry, ReportPage, ReportQuery } from "@flotta/core/ReportLog"
import { DEFAULT_LIMIT, MAX_LIMIT, reportWhere } from "@flotta/core/ReportLog"
import * as Sqlite from "@flotta/core/Sqlite"
import { Context, Effect, Exit, Layer, Option, Redacted, Schedule, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { ClusterStoreConfig } from "./ClusterConfig.js"
import { describeStore } from "./ClusterConfig.js"

export interface HostRow {
  readonly host: string
  readonly address: string
  readonly incarnation: string
  /** Milliseconds since its lease was last renewed, by the database's clock. */
  readonly age: number
}

/** A bigint column: Postgres gives it as a string. */
const BigIntColumn = Schema.Union(Schema.Number, Schema.NumberFromString)
const NullOrString = Schema.NullOr(Schema.String)

/**
 * Where an agent lives, decoded from its row. `epoch` grows with every change of hands; a change is made only at
 * the epoch it read.
 */
const PlacementRow = Schema.Struct({
  name: Schema.String,
  host: Schema.String,
  /** The process that runs it now; null while it is being placed or moved. */
  incarnation: NullOrString,
  epoch: BigIntColumn,
  sessionId: NullOrString.pipe(Schema.propertySignature, Schema.fromKey("session_id")),
  cwd: Schema.String,
  /** The agent's options as plain data (what another host needs to start it again). */
  options: Schema.parseJson(AgentOptions),
  /** The host it was last moved from, when it was. */
  movedFrom: NullOrString.pipe(Schema.propertySignature, Schema.fromKey("moved_from"))
})
export type Placement = typeof PlacementRow.Type
const decodePlacements = Schema.decodeUnknown(Schema.Array(PlacementRow))
const encodeOptions = Schema.encode(Schema.parseJson(AgentOptions))

/** An entry of the fleet-wide report log, decoded from its row. */
const ReportRow = Schema.Struct({
  seq: BigIntColumn,
  at: Schema.String,
  agent: Schema.String,
  kind: AgentView.ReportKind,
  turnId: Schema.requiredToOptional(NullOrString, Schema.String, {
    decode: Option.fromNullable,
    encode: Option.getOrNull
  }).pipe(Schema.fromKey("turn_id")),
  data: Schema.parseJson(),
  host: Schema.String
})
const decodeReports = Schema.decodeUnknown(Schema.Array(ReportRow))

const textOf = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = (error as { readonly cause?: unknown }).cause
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message
  }
  return String(error)
}

/**
 * One SQLite connection per file in a process, shared by every node in it (tests run several). The driver
 * (core's `Sqlite`) waits for another connection's lock synchronously, so two connections in one process could
 * each hold the event loop while the other holds the lock; one connection's own queue serializes them instead.
 */
const sqliteClients = new Map<
  string,
  { readonly client: SqlClient.SqlClient; users: number; readonly scope: Scope.CloseableScope }
>()

const sqliteClient = (file: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const shared = sqliteClients.get(file)
      if (shared !== undefined) {
        shared.users++
        return shared.client
      }
      yield* Effect.try(() => fs.mkdirSync(path.dirname(file), { recursive: true }))
      const scope = yield* Scope.make()
      // Several processes share the file: a writer waits up to 5 s for another's lock instead of failing at once.
      const client = yield* Sqlite.make({ filename: file, busyTimeoutMs: 5_000 }).pipe(
        Effect.provide(Reactivity.layer),
        Scope.extend(scope),
        Effect.tapError(() => Scope.close(scope, Exit.void))
      )
      sqliteClients.set(file, { client, users: 1, scope })
      return client as SqlClient.SqlClient
    }),
    () =>
      Effect.suspend(() => {
        const shared = sqliteClients.get(file)
        if (shared === undefined || --shared.users > 0) return Effect.void
        sqliteClients.delete(file)
        return Scope.close(shared.scope, Exit.void)
      })
  )

const make = (config: ClusterStoreConfig) =>
  Effect.gen(function*() {
    const location = describeStore(config)
    const unavailable = (error: unknown) =>
      new StoreUnavailable({
        location,
        reason: textOf(error),
        hint: "Check that every node names the same cluster store and that it is reachable"
      })
    const sql: SqlClient.SqlClient = "postgres" in config
      ? yield* PgClient.make({
        url: Redacted.make(config.postgres),
        maxConnections: 10,
        connectTimeout: "10 seconds",
        applicationName: "flotta-cluster"
      }).pipe(Effect.provide(Reactivity.layer), Effect.mapError(unavailable))
      : yield* sqliteClient(config.sqlite).pipe(
        // A driver that does not load says what to run: that stands as it is.
        Effect.mapError((error) => error instanceof StoreUnavailable ? error : unavailable(error))
      )
    const pg = "postgres" in config
    /** The database's clock, in milliseconds. */
    const now = pg
      ? sql.literal("(extract(epoch from clock_timestamp()) * 1000)::bigint")
      : sql.literal("cast((julianday('now') - 2440587.5) * 86400000 as integer)")
    const serial = pg ? sql.literal("bigserial primary key") : sql.literal("integer primary key autoincrement")

    /** Postgres: waits for `key`'s transaction-scoped advisory lock. SQLite: one writer holds the file already. */
    const exclusive = (key: string) =>
      pg ? Effect.asVoid(sql`select pg_advisory_xact_lock(hashtext(${key}))`) : Effect.void

    // Nodes that start together create the tables one at a time: Postgres's `create table if not exists` is not
    // safe against a concurrent create of the same name (the loser trips pg_class's unique index).
    yield* Effect.zipRight(
      exclusive("flotta-cluster-schema"),
      Effect.all([
        sql`create table if not exists flotta_cluster_meta (key text primary key, value text not null)`,
        sql`create table if not exists flotta_cluster_hosts (
        host text primary key, address text not null, incarnation text not null, renewed_at bigint not null)`,
        sql`create table if not exists flotta_cluster_agents (
        name text primary key, host text not null, incarnation text, epoch bigint not null,
        session_id text, cwd text not null, options text not null, moved_from text)`,
        sql`create table if not exists flotta_cluster_sessions (
        name text not null, session_id text not null, byte_offset bigint not null, chunk text not null,
        primary key (name, session_id, byte_offset))`,
        sql`create table if not exists flotta_cluster_reports (
        seq ${serial}, host text not null, at text not null, agent text not null, kind text not null,
        turn_id text, data text not null)`,
        sql`create index if not exists flotta_cluster_reports_agent on flotta_cluster_reports (agent, seq)`
      ], { discard: true })
    ).pipe(
      sql.withTransaction,
      // A SQLite writer that outlasts the busy timeout: the next try makes the tables, or finds them made.
      Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 5, while: () => !pg }),
      Effect.mapError(unavailable)
    )

    const fail = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.mapError(effect, unavailable)

    // --- meta ---

    /** The value kept under `key`: `value` when there was none (the first node to ask sets it). */
    const settle = (key: string, value: string) =>
      fail(Effect.gen(function*() {
        yield* sql`insert into flotta_cluster_meta (key, value) values (${key}, ${value}) on conflict (key) do nothing`
        const rows = yield* sql<{ readonly value: string }>`select value from flotta_cluster_meta where key = ${key}`
        return rows[0]?.value ?? value
      }))

    // --- hosts ---

    const hosts = fail(
      sql<{ host: string; address: string; incarnation: string; age: number | string }>`
        select host, address, incarnation, ${now} - renewed_at as age from flotta_cluster_hosts order by host`
    ).pipe(Effect.map((rows): ReadonlyArray<HostRow> => rows.map((r) => ({ ...r, age: Number(r.age) }))))

    /** Takes the host name for this process (the previous incarnation's lease must have lapsed: see Cluster). */
    const join = (host: string, address: string, incarnation: string) =>
      fail(sql`insert into flotta_cluster_hosts (host, address, incarnation, renewed_at)
        values (${host}, ${address}, ${incarnation}, ${now})
        on conflict (host) do update set address = excluded.address, incarnation = excluded.incarnation,
          renewed_at = excluded.renewed_at`).pipe(Effect.asVoid)

    /** Renews this process's lease; false when another process has taken the host name since. */
    const renew = (host: string, incarnation: string) =>
      fail(sql<{ host: string }>`update flotta_cluster_hosts set renewed_at = ${now}
        where host = ${host} and incarnation = ${incarnation} returning host`).pipe(Effect.map((r) => r.length > 0))

    // --- placements ---

    const placements: Effect.Effect<ReadonlyArray<Placement>, StoreUnavailable> = fail(
      Effect.flatMap(sql`select * from flotta_cluster_agents order by name`, decodePlacements)
    )

    const placement = (name: string) =>
      fail(Effect.flatMap(sql`select * from flotta_cluster_agents where name = ${name}`, decodePlacements)).pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    /** Reserves a name on a host; false when the name is taken anywhere in the cluster. */
    const place = (name: string, host: string, cwd: string, options: DataOptions) =>
      fail(Effect.gen(function*() {
        const data = yield* encodeOptions(options)
        return yield* sql<{ name: string }>`insert into flotta_cluster_agents (name, host, incarnation, epoch, cwd,
          options) values (${name}, ${host}, null, 1, ${cwd}, ${data}) on conflict (name) do nothing returning name`
      })).pipe(Effect.map((r) => r.length > 0))

    /** The host's process takes the agent it was given, at the epoch it read. */
    const claim = (name: string, host: string, epoch: number, incarnation: string, sessionId: string, cwd: string) =>
      fail(sql<{ name: string }>`update flotta_cluster_agents set incarnation = ${incarnation},
          session_id = ${sessionId}, cwd = ${cwd}, epoch = epoch + 1
        where name = ${name} and host = ${host} and epoch = ${epoch} returning name`).pipe(
        Effect.map((r) => r.length > 0)
      )

    /** Gives a dead host's agent to another host, at the epoch read. */
    const move = (name: string, from: string, to: string, epoch: number) =>
      fail(sql<{ name: string }>`update flotta_cluster_agents set host = ${to}, incarnation = null,
          moved_from = ${from}, epoch = epoch + 1
        where name = ${name} and host = ${from} and epoch = ${epoch} returning name`).pipe(
        Effect.map((r) => r.length > 0)
      )

    /** Frees a name (and drops its mirrored conversation); `epoch` makes it conditional on nobody having moved it. */
    const remove = (name: string, epoch?: number) =>
      fail(Effect.gen(function*() {
        const rows = epoch === undefined
          ? yield* sql<{ name: string }>`delete from flotta_cluster_agents where name = ${name} returning name`
          : yield* sql<{ name: string }>`delete from flotta_cluster_agents
              where name = ${name} and epoch = ${epoch} returning name`
        if (rows.length > 0) yield* sql`delete from flotta_cluster_sessions where name = ${name}`
        return rows.length > 0
      }))

    // --- mirrored conversations ---

    const appendSession = (name: string, sessionId: string, offset: number, chunk: string) =>
      fail(sql`insert into flotta_cluster_sessions (name, session_id, byte_offset, chunk)
        values (${name}, ${sessionId}, ${offset}, ${chunk}) on conflict do nothing`).pipe(Effect.asVoid)

    /** The conversation as mirrored so far, and how many bytes of the file it covers. */
    const session = (name: string, sessionId: string) =>
      fail(sql<{ byte_offset: number | string; chunk: string }>`select byte_offset, chunk
        from flotta_cluster_sessions where name = ${name} and session_id = ${sessionId} order by byte_offset`).pipe(
        Effect.map((rows) => {
          let text = ""
          let end = 0
          for (const row of rows) {
            if (Number(row.byte_offset) !== end) break
            text += row.chunk
            end += Buffer.byteLength(row.chunk)
          }
          return { text, bytes: end }
        })
      )

    // --- the fleet-wide report log ---

    // Commits in seq order, so a reader's cursor never passes an entry that is still being written.
    const appendReports = (host: string, entries: ReadonlyArray<ReportEntry>) =>
      entries.length === 0 ? Effect.void : fail(
        Effect.zipRight(
          exclusive("flotta-cluster-reports"),
          sql`insert into flotta_cluster_reports ${
            sql.insert(entries.map((e) => ({
              host,
              at: e.at,
              agent: e.agent,
              kind: e.kind,
              turn_id: e.turnId ?? null,
              data: JSON.stringify(e.data ?? null)
            })))
          }`
        ).pipe(sql.withTransaction)
      ).pipe(Effect.asVoid)

    const reports = (query: ReportQuery = {}): Effect.Effect<ReportPage, StoreUnavailable> =>
      fail(Effect.gen(function*() {
        const { last, limit = DEFAULT_LIMIT, since = 0 } = query
        const newest = Number(
          (yield* sql<{ seq: number | string | null }>`select max(seq) as seq from flotta_cluster_reports`)[0]?.seq ?? 0
        )
        const where = reportWhere(sql, query, newest)
        if (last !== undefined) {
          const max = Math.max(1, Math.min(last, MAX_LIMIT))
          const rows = yield* decodeReports(
            yield* sql`select * from flotta_cluster_reports where ${where} order by seq desc limit ${max}`
          )
          return { entries: [...rows].reverse(), next: Math.max(since, newest) }
        }
        const max = Math.max(1, Math.min(limit, MAX_LIMIT))
        const entries = yield* decodeReports(
          yield* sql`select * from flotta_cluster_reports where ${where} order by seq limit ${max}`
        )
        return {
          entries,
          next: entries.length >= max ? entries[entries.length - 1]!.seq : Math.max(since, newest)
        }
      }))

    return {
      location,
      sql,
      settle,
      hosts,
      join,
      renew,
      placements,
      placement,
      place,
      claim,
      move,
      remove,
      appendSession,
      session,
      appendReports,
      reports
    } as const
  })

export class ClusterStore extends Context.Tag("@flotta/cluster/ClusterStore")<
  ClusterStore,
  Effect.Effect.Success<ReturnType<typeof make>>
>() {
  /** The store and, for `@effect/cluster`'s own tables, its SQL client. */
  static layer(config: ClusterStoreConfig): Layer.Layer<ClusterStore | SqlClient.SqlClient, StoreUnavailable> {
    return Layer.scopedContext(
      Effect.map(
        make(config),
        (store) => Context.make(ClusterStore, store).pipe(Context.add(SqlClient.SqlClient, store.sql))
      )
    )
  }
}

export type ClusterStoreShape = ClusterStore["Type"]
