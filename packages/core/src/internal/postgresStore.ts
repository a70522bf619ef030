/**
 * The Postgres store, for a fleet whose state is shared: optionally in a schema of its own, held by one host
 * at a time through an advisory lock on a connection kept for the store's life.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import type { Scope } from "effect"
import * as os from "node:os"
import { StoreLocked, StoreUnavailable } from "../Errors.js"
import type { StoreError } from "../Errors.js"
import { describeConfig } from "../Store.js"
import type { StoreOptions, StoreShape } from "../Store.js"
import { causeText, make, migrate } from "./sqlStore.js"

/** One advisory lock key per schema: "flotta" and the schema name, hashed by Postgres itself. */
const LOCK_KEY = "flotta-store:"

export const openPostgres = (
  target: { readonly url: string; readonly schema?: string },
  options: StoreOptions & { readonly readOnly?: boolean }
): Effect.Effect<StoreShape, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const location = describeConfig({ postgres: target }) +
      (target.schema === undefined ? "" : ` (schema ${target.schema})`)
    const schema = target.schema
    const unavailable = (error: unknown) =>
      new StoreUnavailable({
        location,
        reason: causeText(error),
        hint: "Check that the server is running, the URL and the credentials"
      })
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      return yield* new StoreUnavailable({
        location,
        reason: `the schema name ${JSON.stringify(schema)} is not a plain identifier`,
        hint: "Use lower-case letters, digits and '_'"
      })
    }
    const url = new URL(target.url)
    if (schema !== undefined) url.searchParams.set("options", `-c search_path=${schema}`)
    const sql = yield* PgClient.make({
      url: Redacted.make(url.toString()),
      maxConnections: 4,
      connectTimeout: "10 seconds",
      applicationName: "flotta"
    }).pipe(Effect.provide(Reactivity.layer), Effect.mapError(unavailable))
    if (schema !== undefined) {
      yield* sql`create schema if not exists ${sql(schema)}`.pipe(Effect.mapError(unavailable))
    }
    if (options.readOnly !== true) {
      // The lock lives on one connection reserved for the store's life: it is released when that closes.
      const connection = yield* sql.reserve.pipe(Effect.mapError(unavailable))
      const key = LOCK_KEY + (schema ?? "public")
      const rows = yield* connection.executeValues(
        "select pg_try_advisory_lock(hashtext($1)), pg_backend_pid()",
        [key]
      ).pipe(Effect.mapError(unavailable))
      if (rows[0]?.[0] !== true) {
        const holder = yield* connection.executeValues(
          `select coalesce(a.application_name, '') || ' (backend pid ' || l.pid || ', client ' ||
             coalesce(a.client_addr::text, 'local') || ')'
           from pg_locks l left join pg_stat_activity a on a.pid = l.pid
           where l.locktype = 'advisory' and l.objid = (hashtext($1)::bigint & 4294967295) and l.granted`,
          [key]
        ).pipe(Effect.orElseSucceed(() => []))
        return yield* new StoreLocked({
          location,
          holder: String(holder[0]?.[0] ?? "another host")
        })
      }
      yield* connection.executeRaw(`set application_name = 'flotta ${os.hostname()} pid ${process.pid}'`, [])
        .pipe(Effect.ignore)
      yield* migrate(sql, "postgres", location)
    }
    return yield* make(sql, { kind: "postgres", location, sizeBytes: sizeOf(sql), chunk: 1000 }, options)
  })

const sizeOf = (sql: PgClient.PgClient) =>
  sql<{ readonly size: string }>`select sum(pg_total_relation_size(c.oid))::text as size from pg_class c
    where c.relname like 'flotta_%' and c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace`.pipe(
    Effect.map((rows) => (rows[0]?.size == null ? null : Number(rows[0].size))),
    Effect.orElseSucceed(() => null)
  )
