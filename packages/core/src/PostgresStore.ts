/**
 * The Postgres store, for a fleet whose state is shared: optionally in a schema of its own, held by one host
 * at a time through an advisory lock on a connection kept for the store's life. Owns the rule for a schema
 * name (`PostgresSchemaName`, in Store, which the cli's config check uses too).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Data, Effect, Either, Layer, Redacted, Schedule, Schema } from "effect"
import type { Scope } from "effect"
import * as os from "node:os"
import { StoreLocked, StoreUnavailable } from "./Errors.js"
import type { StoreError } from "./Errors.js"
import { causeText } from "./internal/sqlSchema.js"
import { migrate } from "./internal/sqlSchema.js"
import { make as makeSqlStore } from "./internal/sqlStore.js"
import { BRIEF_HOLD_WAIT, describeConfig, PostgresSchemaName, Store } from "./Store.js"
import type { StoreOptions, StoreShape } from "./Store.js"

/** Where a Postgres store is: the server's URL, and optionally a schema of it. */
export type PostgresTarget = string | { readonly url: string; readonly schema?: string }

/** One advisory lock key per schema: "flotta" and the schema name, hashed by Postgres itself. */
const LOCK_KEY = "flotta-store:"

/** The application name of a connection that holds the store only for a moment (`StoreOptions.brief`). */
const BRIEF_NAME = "flotta import"

/** The lock's holder is there only for a moment. */
class HeldBriefly extends Data.TaggedError("HeldBriefly")<{ readonly holder: string }> {}

/** Opens the store in `target` (made when missing, then migrated), held until the scope closes. */
export const make = Effect.fn("PostgresStore.make")(function*(
  target: PostgresTarget,
  options: StoreOptions = {}
): Effect.fn.Return<StoreShape, StoreError, Scope.Scope> {
  const { schema, url: base } = typeof target === "string" ? { url: target, schema: undefined } : target
  const location = describeConfig({ postgres: base }) + (schema === undefined ? "" : ` (schema ${schema})`)
  const unavailable = (error: unknown) =>
    new StoreUnavailable({
      location,
      reason: causeText(error),
      hint: "Check that the server is running, the URL and the credentials"
    })
  if (schema !== undefined && Either.isLeft(Schema.decodeEither(PostgresSchemaName)(schema))) {
    return yield* new StoreUnavailable({
      location,
      reason: `the schema name ${JSON.stringify(schema)} is not a plain identifier`,
      hint: "Use lower-case letters, digits and '_'"
    })
  }
  const url = new URL(base)
  if (schema !== undefined) url.searchParams.set("options", `-c search_path=${schema}`)
  const sql = yield* PgClient.make({
    url: Redacted.make(url.toString()),
    maxConnections: 4,
    connectTimeout: "10 seconds",
    // A brief holder says so in its name, which a host waiting for the lock reads.
    applicationName: options.brief === true ? BRIEF_NAME : "flotta"
  }).pipe(Effect.provide(Reactivity.layer), Effect.mapError(unavailable))
  if (schema !== undefined) {
    yield* sql`create schema if not exists ${sql(schema)}`.pipe(Effect.mapError(unavailable))
  }
  if (options.readOnly !== true) {
    // The lock lives on one connection reserved for the store's life: it is released when that closes.
    const connection = yield* sql.reserve.pipe(Effect.mapError(unavailable))
    const key = LOCK_KEY + (schema ?? "public")
    const attempt = Effect.gen(function*() {
      const rows = yield* connection.executeValues(
        "select pg_try_advisory_lock(hashtext($1)), pg_backend_pid()",
        [key]
      ).pipe(Effect.mapError(unavailable))
      if (rows[0]?.[0] === true) return
      const holder = yield* connection.executeValues(
        `select coalesce(a.application_name, '') || ' (backend pid ' || l.pid || ', client ' ||
             coalesce(a.client_addr::text, 'local') || ')'
           from pg_locks l left join pg_stat_activity a on a.pid = l.pid
           where l.locktype = 'advisory' and l.objid = (hashtext($1)::bigint & 4294967295) and l.granted`,
        [key]
      ).pipe(Effect.orElseSucceed(() => []))
      const named = String(holder[0]?.[0] ?? "another host")
      return yield* (named.startsWith(BRIEF_NAME)
        ? new HeldBriefly({ holder: named })
        : new StoreLocked({ location, holder: named }))
    })
    // A holder there only for a moment (a shell run's import) is waited for.
    yield* attempt.pipe(
      Effect.retry({
        while: (error) => error._tag === "HeldBriefly",
        schedule: Schedule.spaced("100 millis").pipe(Schedule.upTo(BRIEF_HOLD_WAIT))
      }),
      Effect.catchTag("HeldBriefly", (held) => new StoreLocked({ location, holder: held.holder }))
    )
    const role = options.brief === true ? BRIEF_NAME : "flotta"
    yield* connection.executeRaw(`set application_name = '${role} ${os.hostname()} pid ${process.pid}'`, [])
      .pipe(Effect.ignore)
    yield* migrate(sql, "postgres", location)
  }
  return yield* makeSqlStore(sql, { kind: "postgres", location, sizeBytes: sizeOf(sql), chunk: 1000 }, options)
})

/** A Postgres database (optionally one schema of it), held by one host at a time (an advisory lock). */
export const layer = (target: PostgresTarget, options: StoreOptions = {}): Layer.Layer<Store, StoreError> =>
  Layer.scoped(Store, make(target, options))

const sizeOf = (sql: PgClient.PgClient) =>
  sql<{ readonly size: string }>`select sum(pg_total_relation_size(c.oid))::text as size from pg_class c
    where c.relname like 'flotta_%' and c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace`.pipe(
    Effect.map((rows) => (rows[0]?.size == null ? null : Number(rows[0].size))),
    Effect.orElseSucceed(() => null)
  )
