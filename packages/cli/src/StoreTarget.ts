/**
 * Where the fleet's state lives: the config's `store` section (decoded by Schema, each error naming its field:
 * `store.retainDays`), or one string (`FLOTTA_STORE`, `--store`); the default SQLite file of `serve` and `repl`.
 */
import { exact, fieldIssues, shown } from "@flotta/core/Decode"
import { PostgresSchemaName } from "@flotta/core/Store"
import type { StoreConfig } from "@flotta/core/Store"
import { Either, ParseResult, Predicate, Schema } from "effect"
import * as path from "node:path"

/** The default store of `serve` and `repl`, under the project directory. */
export const DEFAULT_STORE_FILE = path.join(".flotta", "state.db")

/**
 * Where a store's run records wait to be imported (see `RunInbox`): `<file>.inbox/` beside an SQLite file (for the
 * default store, `.flotta/state.db.inbox/`, which `flotta init`'s `.gitignore` line covers), `.flotta/inbox/` in the
 * project for Postgres; none for memory, which keeps nothing.
 */
export const inboxOf = (store: StoreConfig, projectDir: string): string | undefined =>
  store === "memory"
    ? undefined
    : "sqlite" in store
    ? `${store.sqlite}.inbox`
    : path.join(projectDir, ".flotta", "inbox")

/** The store section: where state lives (an SQLite path made absolute), and how long it is kept. */
export interface StoreSection {
  readonly config: StoreConfig
  readonly retainDays?: number
}

/** One thing wrong with the `store` section, at its path. */
export interface StoreIssue {
  readonly path: string
  readonly reason: string
}

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i
const SQLITE_FILE = /\.(?:db|sqlite3?)$/i

const STORE_FORMS = "expected \"memory\", { \"sqlite\": \"path\" } or { \"postgres\": \"postgres://...\" }"
const URL_FORM = "expected a postgres://user:password@host:port/database URL"

/** A message for every failure of `schema`, the value quoted: `expected ..., got "x"`. */
const saying = <A, I>(schema: Schema.Schema<A, I>, expected: string) =>
  schema.annotations({ message: (issue) => ({ message: `${expected}, got ${shown(issue.actual)}`, override: true }) })

const RetainDays = saying(
  Schema.Number.pipe(Schema.int(), Schema.positive()),
  "expected a whole number of days above 0"
)

const SqlitePath = saying(
  Schema.String.pipe(Schema.minLength(1), Schema.filter((file) => file.trim().length > 0)),
  "expected the path of an SQLite file"
)

// Said as plain type mismatches (no message on the refinement itself), so that within the union below, the
// other member's deeper issue hides this one's (see `fieldIssues`).
const urlMessage = (issue: ParseResult.ParseIssue) => `${URL_FORM}, got ${shown(issue.actual)}`
const PostgresUrl = Schema.String.annotations({ message: urlMessage }).pipe(
  Schema.filter((url) => (POSTGRES_URL.test(url) && URL.canParse(url)) || `${URL_FORM}, got ${shown(url)}`)
)

// The engine's rule for a schema name (the store reaches it through search_path, which folds case).
const SchemaName = saying(
  PostgresSchemaName,
  "expected a schema name (lower-case letters, digits and _, not starting with a digit, at most 63)"
)

const PostgresTarget = Schema.Union(
  PostgresUrl,
  Schema.Struct({
    url: Schema.propertySignature(PostgresUrl).annotations({ missingMessage: () => `${URL_FORM}, got nothing` }),
    schema: exact(SchemaName)
  })
).annotations({
  // An object is said field by field; anything else at once.
  message: (issue) =>
    Predicate.isRecord(issue.actual)
      ? { message: "", override: false }
      : {
        message: typeof issue.actual === "string"
          ? urlMessage(issue)
          : `expected a postgres:// URL or { "url": ..., "schema": ... }, got ${shown(issue.actual)}`,
        override: true
      }
})

const SQLITE_DESCRIPTION = "An SQLite file (WAL mode), relative to the project directory."
const POSTGRES_DESCRIPTION = "A `postgres://user:password@host:port/database` URL, or `{ url, schema }` to keep the " +
  "fleet's tables in a schema of their own (one host writes a schema at a time)."
const RETAIN_DESCRIPTION = "Report entries, finished turns and closed agents older than this are pruned (default 30)."

/** The object form of `store`: one of `sqlite` or `postgres`, and `retainDays`. */
const StoreFields = Schema.Struct({
  sqlite: exact(SqlitePath),
  postgres: exact(PostgresTarget),
  retainDays: exact(RetainDays)
}).annotations({ message: (issue) => `${STORE_FORMS}, got ${shown(issue.actual)}` }).pipe(
  Schema.filter((store) =>
    store.sqlite === undefined && store.postgres === undefined
      ? `${STORE_FORMS}, got ${shown(store)}`
      : store.sqlite !== undefined && store.postgres !== undefined
      ? "give one of sqlite or postgres, not both"
      : true
  )
)

/** What the config's `store` accepts, as the reference shows it (`readStore` decodes it, naming the bad field). */
export const StoreSchema = Schema.Union(
  Schema.Literal("memory"),
  Schema.Struct({
    sqlite: Schema.propertySignature(SqlitePath).annotations({ description: SQLITE_DESCRIPTION }),
    retainDays: exact(RetainDays).annotations({ description: RETAIN_DESCRIPTION })
  }),
  Schema.Struct({
    postgres: Schema.propertySignature(PostgresTarget).annotations({ description: POSTGRES_DESCRIPTION }),
    retainDays: exact(RetainDays).annotations({ description: "As for sqlite (default 30)." })
  })
)

const decodeFields = Schema.decodeUnknownEither(StoreFields, { errors: "first", onExcessProperty: "error" })

/** The config's `store` value, decoded (an error names its field); an SQLite path is made absolute against `base`. */
export const readStore = (value: unknown, base: string): Either.Either<StoreSection, StoreIssue> => {
  if (value === "memory") return Either.right({ config: "memory" })
  return Either.match(decodeFields(value), {
    onLeft: (error) => {
      const [issue] = fieldIssues(error, "store")
      return Either.left({ path: issue?.path ?? "store", reason: issue?.message ?? STORE_FORMS })
    },
    onRight: ({ postgres, retainDays, sqlite }) => {
      const kept = retainDays === undefined ? {} : { retainDays }
      // The refinement leaves exactly one of the two.
      const config: StoreConfig = postgres !== undefined
        ? { postgres }
        : { sqlite: path.resolve(base, sqlite ?? DEFAULT_STORE_FILE) }
      return Either.right({ config, ...kept })
    }
  })
}

/**
 * A store named in one string (FLOTTA_STORE, `--store`): `memory`, a postgres:// (or postgresql://) URL, or an
 * SQLite file, made absolute against `base`. With `requireSuffix`, the file must end in .db, .sqlite or .sqlite3,
 * so that a mistyped word never becomes a new database.
 */
export const readStoreTarget = (
  text: string,
  base: string,
  options: { readonly requireSuffix?: boolean } = {}
): Either.Either<StoreConfig, string> => {
  const value = text.trim()
  if (value === "memory") return Either.right("memory")
  if (POSTGRES_URL.test(value)) {
    return URL.canParse(value)
      ? Either.right({ postgres: value })
      : Either.left(`${URL_FORM}, got ${JSON.stringify(text)}`)
  }
  if (
    value.length === 0 || /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || (options.requireSuffix && !SQLITE_FILE.test(value))
  ) {
    return Either.left(
      `expected memory, an SQLite file (ending .db, .sqlite or .sqlite3) or a postgres:// URL, got ${
        JSON.stringify(text)
      }`
    )
  }
  return Either.right({ sqlite: path.resolve(base, value) })
}

/**
 * The store a command uses: the config's, else `.flotta/state.db` in the project (`dir`); memory unless `durable`
 * (`serve` and `repl` are; a one-shot fleet is not).
 */
export const storeFor = (
  config: { readonly store?: StoreSection | undefined; readonly dir: string },
  durable: boolean
): StoreConfig => durable ? (config.store?.config ?? { sqlite: path.join(config.dir, DEFAULT_STORE_FILE) }) : "memory"
