/**
 * The config file: found at `--config PATH`, else `flotta.config.json`, `.flotta/config.json` or
 * `flotta.config.ts` (default export, `defineConfig({...})` for type checking) in the project directory.
 *
 * It is decoded once, by one Schema (`FileSchema`), into one section per layer: `fleet` for `Flotta.layer`,
 * `store` for the engine's `Store`, `mcp` for `McpServer.layer`, `dashboard` for `Dashboard.layer`, `schedule` for `Scheduler.layer` (an absent
 * section is `undefined`, and its layer is then `Layer.empty`; an absent `store` is the command's default). The environment overrides the file through one mapping (`ENVIRONMENT`).
 * Errors name the file (or the variable), the path of the bad field and what was expected. A bad top-level
 * field stops the command; a bad agent or routine entry is reported and skipped, and the rest boots.
 */
import { FileSystem } from "@effect/platform"
import * as ClusterConfig from "@flotta/cluster/ClusterConfig"
import * as Otlp from "@flotta/core/Otlp"
import * as Spec from "@flotta/core/Spec"
import type { StoreConfig } from "@flotta/core/Store"
import * as DashboardConfig from "@flotta/dashboard/DashboardConfig"
import * as McpConfig from "@flotta/mcp/McpConfig"
import * as Routine from "@flotta/scheduler/Routine"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import { Config, Effect, Either, Option, ParseResult, Schema } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  file: Schema.String,
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return this.path.length === 0 ? `${this.file}: ${this.reason}` : `${this.file}: ${this.path}: ${this.reason}`
  }
}

/** What a config file may hold. `defineConfig` checks it at compile time; `load` checks it at run time. */
export interface FlottaConfig {
  /** The claude executable (else FLOTTA_CLAUDE_PATH, the pinned dependency, then PATH). */
  readonly claudePath?: string
  /** Children starting at once (default: twice the cores). */
  readonly maxConcurrentStarts?: number
  /** How long a tool call in an agent's `ask` list waits for a human, in milliseconds (default 15 minutes). */
  readonly approvalTimeout?: number
  /** Merged under every agent entry; the entry's own fields win. */
  readonly fleetDefaults?: Partial<Omit<Spec.SpecInput, "name">>
  /** `session` entries start with `serve` and `repl`; `run` entries are templates. */
  readonly agents?: ReadonlyArray<Spec.SpecInput>
  /** Serve the fleet over MCP (Streamable HTTP on 127.0.0.1). */
  readonly mcp?: McpConfig.FileSection
  /** The live web page of the fleet: at `/` of the MCP server, or on a `port` of its own. */
  readonly dashboard?: DashboardConfig.FileSection
  /** Working hours: switches the scheduler on. */
  readonly schedule?: Readonly<Record<string, unknown>>
  /** Recurring work for the scheduler. */
  readonly routines?: ReadonlyArray<Readonly<Record<string, unknown>>>
  /** OpenTelemetry export: `{ "otlp": "http://127.0.0.1:4318", "children"?, "serviceName"?, "headers"? }`. */
  readonly telemetry?: Otlp.FileSection
  /**
   * Where `serve` and `repl` keep the fleet's state (default `{ "sqlite": ".flotta/state.db" }`): `"memory"`,
   * an SQLite file (relative to the project directory), or a Postgres database; `retainDays` (default 30).
   */
  readonly store?: StoreFileValue
  /**
   * One fleet over several hosts (`flotta serve` joins it): `{ "store": { "postgres": URL } | { "sqlite": PATH },
   * "host", "listen": { "host", "port" }, "secret"?, "leaseMs"?, "shardsPerGroup"? }`.
   */
  readonly cluster?: ClusterConfig.FileSection
}

/** The config's `store` value, as written. */
export type StoreFileValue =
  | "memory"
  | { readonly sqlite: string; readonly retainDays?: number }
  | {
    readonly postgres: string | { readonly url: string; readonly schema?: string }
    readonly retainDays?: number
  }

/** Type-checks a `flotta.config.ts`. */
export const defineConfig = (config: FlottaConfig): FlottaConfig => config

export const CONFIG_FILES: ReadonlyArray<string> = [
  "flotta.config.json",
  path.join(".flotta", "config.json"),
  "flotta.config.ts"
]

const exact = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })

/** An optional field described for the config reference (docs/reference/config.md); `shape`: see `ShapeAnnotationId`. */
const field = <A, I>(schema: Schema.Schema<A, I>, description: string, shape?: Schema.Schema.All) =>
  exact(schema).annotations({ description, ...(shape === undefined ? {} : { [Spec.ShapeAnnotationId]: shape }) })

/** What `readStore` accepts (it checks it field by field, naming the bad one). */
export const StoreSchema = Schema.Union(
  Schema.Literal("memory"),
  Schema.Struct({
    sqlite: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({
      description: "An SQLite file (WAL mode), relative to the project directory."
    }),
    retainDays: exact(Schema.Number.pipe(Schema.int(), Schema.positive())).annotations({
      description: "Report entries, finished turns and closed agents older than this are pruned (default 30)."
    })
  }),
  Schema.Struct({
    postgres: Schema.propertySignature(Schema.Union(
      Schema.String,
      Schema.Struct({ url: Schema.String, schema: exact(Schema.String) })
    )).annotations({
      description: "A `postgres://user:password@host:port/database` URL, or `{ url, schema }` to keep the " +
        "fleet's tables in a schema of their own (one host writes a schema at a time)."
    }),
    retainDays: exact(Schema.Number.pipe(Schema.int(), Schema.positive())).annotations({
      description: "As for sqlite (default 30)."
    })
  })
)

/** The whole file, every section. Agent and routine entries are checked one by one (a bad one is skipped). */
export const FileSchema = Schema.Struct({
  $schema: field(Schema.String, "Ignored: room for an editor's JSON Schema reference."),
  claudePath: field(
    Schema.String.pipe(Schema.minLength(1)),
    "The claude executable. Else `FLOTTA_CLAUDE_PATH`, then the pinned `@anthropic-ai/claude-code` (its " +
      "platform package's binary), then `claude` on PATH."
  ),
  maxConcurrentStarts: field(
    Schema.Number.pipe(Schema.int(), Schema.positive()),
    "Children starting at once (default: twice the cores); more wait for a slot, which never times out."
  ),
  approvalTimeout: field(
    Schema.Number.pipe(Schema.int(), Schema.positive()),
    "How long a tool call under `ask` waits for a human, in milliseconds, before it is denied (default 15 minutes)."
  ),
  fleetDefaults: field(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }),
    "Agent fields (any but `name`) merged under every agent entry; the entry's own fields win.",
    Spec.Spec
  ),
  agents: field(
    Schema.Array(Schema.Unknown),
    "The declared fleet: `session` entries start with `serve` and `repl`; `run` entries are templates for runs. " +
      "A bad entry is reported with the path of its bad field and skipped; the rest boots.",
    Schema.Array(Spec.Spec)
  ),
  mcp: field(
    McpConfig.FileSection,
    "Serve the fleet over MCP (Streamable HTTP) at `http://127.0.0.1:4099/mcp`. Absent: no port is opened."
  ),
  dashboard: field(
    DashboardConfig.FileSection,
    "Serve the live dashboard: at `/` of the MCP server (`{}`), or on a `port` of its own. Absent: none."
  ),
  schedule: field(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }),
    "Working hours: switches the scheduler on. Absent: no timer runs.",
    SchedulerConfig.ScheduleSection
  ),
  routines: field(
    Schema.Array(Schema.Unknown),
    "Recurring work for the scheduler (with a `schedule`). A bad routine is reported and skipped.",
    Schema.Array(Routine.RoutineSchema)
  ),
  telemetry: field(
    Otlp.FileSection,
    "Export spans and metrics over OpenTelemetry (OTLP/HTTP). Absent, and no `OTEL_EXPORTER_OTLP_*` in the " +
      "environment: nothing is exported."
  ),
  cluster: field(
    ClusterConfig.FileSection,
    "One fleet over several hosts: `flotta serve` joins the cluster. Absent: one host."
  ),
  // Checked by `readStore`, which names the bad field within it (a union's own message would not).
  store: field(
    Schema.Unknown,
    "Where `serve` and `repl` keep the fleet's state, so that a restart brings every agent back. Absent: " +
      "`{ \"sqlite\": \".flotta/state.db\" }` in the project directory; `run` and `mcp` keep it in memory.",
    StoreSchema
  )
}).annotations({
  description: "`flotta.config.json` (JSON with comments) in the project directory, or `.flotta/config.json`, or " +
    "`flotta.config.ts` exporting `defineConfig({...})` from `flotta` (type-checked), or the file `--config` names. " +
    "It is decoded once, by one Schema, into one section per layer; a section that is absent switches its layer " +
    "off. An error names the file, the path of the bad field and what was expected (`flotta.config.json: " +
    "mcp.port: Expected number, actual \"eighty\"`)."
})

const decodeFile = Schema.decodeUnknownEither(FileSchema, { errors: "first", onExcessProperty: "error" })

/** The engine's section: its settings and the declared fleet, validated entry by entry. */
export interface FleetSection {
  readonly claudePath?: string
  readonly maxConcurrentStarts?: number
  /** Milliseconds a tool call waits for a human's approval. */
  readonly approvalTimeout?: number
  readonly fleet: Spec.Fleet
}

/** The store section: where state lives (an SQLite path made absolute), and how long it is kept. */
export interface StoreSection {
  readonly config: StoreConfig
  readonly retainDays?: number
}

/** A decoded config: one section per layer; `undefined` when the file does not have it. */
export interface LoadedConfig {
  /** The file read, or null when there is none (an empty config). */
  readonly file: string | null
  /**
   * The project directory: the config file's (the one holding `.flotta/` for `.flotta/config.json`), else the
   * directory the command looked in. Relative store paths and the default store are under it.
   */
  readonly dir: string
  readonly fleet: FleetSection
  /** The config's `store`, or undefined: then `serve` and `repl` use `.flotta/state.db` under `dir`. */
  readonly store: StoreSection | undefined
  readonly mcp: McpConfig.McpConfigInput | undefined
  readonly dashboard: DashboardConfig.DashboardConfigInput | undefined
  readonly schedule: SchedulerConfig.SchedulerConfig | undefined
  /** The config's `telemetry`; export may still come from the OTEL_EXPORTER_OTLP_* environment without it. */
  readonly telemetry: Otlp.FileSection | undefined
  /** The config's `cluster`: `serve` joins it (relative SQLite paths are taken from `dir`). */
  readonly cluster: ClusterConfig.FileSection | undefined
}

/** One environment variable and the config field it overrides. */
export interface Override {
  readonly variable: string
  /** The field: top level, or `[section, key]` (applied only when the file has that section). */
  readonly path: readonly [string] | readonly [string, string]
  /** `store`: `memory`, an SQLite file (ending .db, .sqlite or .sqlite3) or a postgres:// URL (`readStoreTarget`). */
  readonly type: "integer" | "string" | "store"
  readonly meaning: string
}

/** The environment's mapping onto the config file: each variable wins over the field it names. */
export const ENVIRONMENT: ReadonlyArray<Override> = [
  {
    variable: "FLOTTA_MAX_CONCURRENT_STARTS",
    path: ["maxConcurrentStarts"],
    type: "integer",
    meaning: "children starting at once (default: twice the cores)"
  },
  {
    variable: "FLOTTA_MCP_PORT",
    path: ["mcp", "port"],
    type: "integer",
    meaning: "the MCP server's port (default 4099)"
  },
  {
    variable: "FLOTTA_MCP_HOST",
    path: ["mcp", "host"],
    type: "string",
    meaning: "the MCP server's address (default 127.0.0.1)"
  },
  {
    variable: "FLOTTA_MCP_TOKEN",
    path: ["mcp", "token"],
    type: "string",
    meaning: "bearer token the MCP server requires, and client commands send"
  },
  {
    variable: "FLOTTA_STORE",
    path: ["store"],
    type: "store",
    meaning: "where serve and repl keep state: memory, an SQLite file (.db) or a postgres:// URL"
  }
]

/** The default store of `serve` and `repl`, under the project directory. */
export const DEFAULT_STORE_FILE = path.join(".flotta", "state.db")

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i
const SQLITE_FILE = /\.(?:db|sqlite3?)$/i

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
      : Either.left(`expected a postgres://user:password@host:port/database URL, got ${JSON.stringify(text)}`)
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
 * The file with the environment's overrides applied. A section-level override applies only to a section the
 * file has (or one listed in `assume`): a variable never switches a server on by itself.
 */
export const applyEnvironment = (file: string, raw: Record<string, unknown>, assume: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const out: Record<string, unknown> = { ...raw }
    for (const name of assume) {
      if (out[name] === undefined) out[name] = {}
    }
    for (const override of ENVIRONMENT) {
      const value = yield* Config.option(Config.nonEmptyString(override.variable)).pipe(
        Effect.orElseSucceed(() => Option.none<string>())
      )
      if (Option.isNone(value)) continue
      let parsed: unknown = value.value
      if (override.type === "store") {
        const target = readStoreTarget(value.value, process.cwd(), { requireSuffix: true })
        if (Either.isLeft(target)) {
          return yield* new ConfigFileError({
            file: `the environment (${file})`,
            path: override.variable,
            reason: target.left
          })
        }
        // The file's retention stays: the variable says where state lives, not how long it is kept.
        const previous = out[override.path[0]]
        const retainDays = typeof previous === "object" && previous !== null && "retainDays" in previous
          ? (previous as { readonly retainDays: unknown }).retainDays
          : undefined
        parsed = target.right === "memory" || retainDays === undefined ? target.right : { ...target.right, retainDays }
      } else if (override.type === "integer") {
        parsed = /^\s*-?\d+\s*$/.test(value.value) ? Number(value.value) : Number.NaN
        if (Number.isNaN(parsed)) {
          return yield* new ConfigFileError({
            file: `the environment (${file})`,
            path: override.variable,
            reason: `expected an integer, got ${JSON.stringify(value.value)}`
          })
        }
      }
      const [first, second] = override.path
      if (second === undefined) out[first] = parsed
      else if (typeof out[first] === "object" && out[first] !== null && !Array.isArray(out[first])) {
        out[first] = { ...(out[first] as Record<string, unknown>), [second]: parsed }
      }
    }
    return out
  })

/** The config file to use: the explicit one (which must exist), or the first of CONFIG_FILES in `dir`. */
export const locate = (dir: string, explicit?: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (explicit !== undefined) {
      const file = path.resolve(dir, explicit)
      if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) {
        return yield* new ConfigFileError({ file, path: "", reason: "no such file (given with --config)" })
      }
      return file
    }
    for (const candidate of CONFIG_FILES) {
      const file = path.join(dir, candidate)
      if (yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))) return file
    }
    return null
  })

/**
 * A TypeScript config, compiled on the fly (tsx), so users get type checking without a build step. It is loaded on
 * the process's own loader (not a namespaced one), so that the config's `import { defineConfig } from "@flotta/cli"`
 * gets the modules already loaded, not a second copy; and once per file and process. A CommonJS project's config
 * needs a fresh URL on a Node without type stripping (else tsx's require of it is a cycle on Node 20), and must
 * keep its plain URL on a Node with it (Node 24 takes the query for part of the file's name).
 */
const typeScriptConfigs = new Map<string, Promise<{ readonly default?: unknown }>>()
const importTypeScript = (file: string) => {
  const loaded = typeScriptConfigs.get(file) ??
    import("tsx/esm/api").then(({ register }) => {
      const unregister = register()
      const plain = pathToFileURL(file).href
      const typeStripping = (process.features as { readonly typescript?: unknown }).typescript
      const url = typeof typeStripping === "string" ? plain : `${plain}?t=${process.hrtime.bigint()}`
      return (import(url) as Promise<{ readonly default?: unknown }>).finally(() => unregister())
    })
  typeScriptConfigs.set(file, loaded)
  return loaded
}

const readRaw = (file: string) =>
  Effect.gen(function*() {
    if (file.endsWith(".ts") || file.endsWith(".mts")) {
      // A TypeScript config is compiled on the fly (tsx), so users get type checking without a build step.
      const module = yield* Effect.tryPromise({
        try: () => importTypeScript(file),
        catch: (e) => new ConfigFileError({ file, path: "", reason: `cannot load: ${String(e)}` })
      })
      const value = module.default
      return (typeof value === "object" && value !== null && "default" in value
        ? (value as { readonly default: unknown }).default
        : value)
    }
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((e) => new ConfigFileError({ file, path: "", reason: `cannot read: ${e.message}` }))
    )
    return yield* Effect.try({
      try: () => JSON.parse(stripComments(text)) as unknown,
      catch: (e) => new ConfigFileError({ file, path: "", reason: `not valid JSON: ${(e as Error).message}` })
    })
  })

/**
 * JSON with `//` and `/* *\/` comments (as `flotta init` writes it, like tsconfig.json): comments become
 * spaces, so JSON.parse's positions in error messages still match the file.
 */
export const stripComments = (text: string): string => {
  let out = ""
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === "\"") {
      const start = i
      for (i++; i < text.length && text[i] !== "\""; i++) if (text[i] === "\\") i++
      out += text.slice(start, ++i)
    } else if (c === "/" && text[i + 1] === "/") {
      for (; i < text.length && text[i] !== "\n"; i++) out += " "
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2)
      const stop = end === -1 ? text.length : end + 2
      out += text.slice(i, stop).replace(/[^\n]/g, " ")
      i = stop
    } else {
      out += c
      i++
    }
  }
  return out
}

const formatPath = (issuePath: ReadonlyArray<PropertyKey>) =>
  issuePath.reduce<string>(
    (
      acc,
      key
    ) => (typeof key === "number" ? `${acc}[${key}]` : acc.length === 0 ? String(key) : `${acc}.${String(key)}`),
    ""
  )

interface FieldError {
  readonly path: string
  readonly reason: string
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const shown = (value: unknown) => (value === undefined ? "nothing" : JSON.stringify(value))

const STORE_FORMS = "expected \"memory\", { \"sqlite\": \"path\" } or { \"postgres\": \"postgres://...\" }"

/** A Postgres schema name: an unquoted SQL identifier. */
const PG_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

const readPostgresUrl = (at: string, value: unknown): Either.Either<string, FieldError> =>
  typeof value === "string" && POSTGRES_URL.test(value) && URL.canParse(value)
    ? Either.right(value)
    : Either.left({
      path: at,
      reason: `expected a postgres://user:password@host:port/database URL, got ${shown(value)}`
    })

/**
 * The config's `store` value, checked field by field (each error names its field: `store.retainDays`); an
 * SQLite path is made absolute against `base`, the project directory.
 */
export const readStore = (value: unknown, base: string): Either.Either<StoreSection, FieldError> => {
  if (value === "memory") return Either.right({ config: "memory" })
  if (!isRecord(value)) return Either.left({ path: "store", reason: `${STORE_FORMS}, got ${shown(value)}` })
  for (const key of Object.keys(value)) {
    if (key !== "sqlite" && key !== "postgres" && key !== "retainDays") {
      return Either.left({
        path: `store.${key}`,
        reason: "is unexpected (store takes sqlite or postgres, and retainDays)"
      })
    }
  }
  const { postgres, retainDays, sqlite } = value
  if ((sqlite === undefined) === (postgres === undefined)) {
    return Either.left({
      path: "store",
      reason: sqlite === undefined ? `${STORE_FORMS}, got ${shown(value)}` : "give one of sqlite or postgres, not both"
    })
  }
  if (retainDays !== undefined && !(typeof retainDays === "number" && Number.isInteger(retainDays) && retainDays > 0)) {
    return Either.left({
      path: "store.retainDays",
      reason: `expected a whole number of days above 0, got ${shown(retainDays)}`
    })
  }
  const kept = retainDays === undefined ? {} : { retainDays: retainDays as number }
  if (sqlite !== undefined) {
    if (typeof sqlite !== "string" || sqlite.trim().length === 0) {
      return Either.left({ path: "store.sqlite", reason: `expected the path of an SQLite file, got ${shown(sqlite)}` })
    }
    return Either.right({ config: { sqlite: path.resolve(base, sqlite) }, ...kept })
  }
  if (typeof postgres === "string") {
    return Either.map(readPostgresUrl("store.postgres", postgres), (url) => ({ config: { postgres: url }, ...kept }))
  }
  if (!isRecord(postgres)) {
    return Either.left({
      path: "store.postgres",
      reason: `expected a postgres:// URL or { "url": ..., "schema": ... }, got ${shown(postgres)}`
    })
  }
  for (const key of Object.keys(postgres)) {
    if (key !== "url" && key !== "schema") {
      return Either.left({ path: `store.postgres.${key}`, reason: "is unexpected (postgres takes url and schema)" })
    }
  }
  const schema = postgres["schema"]
  if (schema !== undefined && !(typeof schema === "string" && PG_IDENTIFIER.test(schema))) {
    return Either.left({
      path: "store.postgres.schema",
      reason: `expected a schema name (letters, digits and _, not starting with a digit), got ${shown(schema)}`
    })
  }
  return Either.map(readPostgresUrl("store.postgres.url", postgres["url"]), (url) => ({
    config: { postgres: schema === undefined ? { url } : { url, schema: schema as string } },
    ...kept
  }))
}

/** The project directory of a config file: its directory, or the one holding `.flotta/` for `.flotta/config.json`. */
export const projectDir = (file: string): string => {
  const dir = path.dirname(path.resolve(file))
  return path.basename(dir) === ".flotta" ? path.dirname(dir) : dir
}

/**
 * Decodes a config object (after the environment's overrides) into its sections; `file` names it in errors, and
 * `dir` is the project directory (relative store paths are under it; default: the file's).
 */
export const decode = (
  file: string,
  raw: unknown,
  dir: string = projectDir(file)
): Either.Either<LoadedConfig, ConfigFileError> => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return Either.left(new ConfigFileError({ file, path: "", reason: "expected an object at the top level" }))
  }
  const decoded = decodeFile(raw)
  if (Either.isLeft(decoded)) {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
    return Either.left(
      new ConfigFileError({ file, path: formatPath(issue?.path ?? []), reason: issue?.message ?? "invalid" })
    )
  }
  const config = decoded.right
  const store = config.store === undefined ? Either.right(undefined) : readStore(config.store, dir)
  if (Either.isLeft(store)) {
    return Either.left(new ConfigFileError({ file, path: store.left.path, reason: store.left.reason }))
  }
  const schedule = SchedulerConfig.read({ schedule: config.schedule, routines: config.routines })
  if (Either.isLeft(schedule)) {
    return Either.left(new ConfigFileError({ file, path: schedule.left.path, reason: schedule.left.reason }))
  }
  return Either.right({
    file,
    dir,
    fleet: {
      ...(config.claudePath === undefined ? {} : { claudePath: config.claudePath }),
      ...(config.maxConcurrentStarts === undefined ? {} : { maxConcurrentStarts: config.maxConcurrentStarts }),
      ...(config.approvalTimeout === undefined ? {} : { approvalTimeout: config.approvalTimeout }),
      fleet: Spec.readFleet({ fleetDefaults: config.fleetDefaults, agents: config.agents })
    },
    store: store.right,
    mcp: McpConfig.fromFile(config.mcp),
    dashboard: DashboardConfig.fromFile(config.dashboard),
    schedule: Option.getOrUndefined(schedule.right),
    telemetry: config.telemetry,
    cluster: config.cluster
  })
}

/** No config: nothing declared, every section absent; `dir` is the project directory. */
export const empty = (dir: string): LoadedConfig => ({
  file: null,
  dir,
  fleet: { fleet: { sessions: [], templates: [], rejected: [] } },
  store: undefined,
  mcp: undefined,
  dashboard: undefined,
  schedule: undefined,
  telemetry: undefined,
  cluster: undefined
})

/**
 * Finds, reads and decodes the config, with the environment's overrides; no file is an empty config.
 * `assume` lists sections to treat as present (empty) when the file lacks them, so the environment applies.
 */
export const load = (dir: string, explicit?: string, options: { readonly assume?: ReadonlyArray<string> } = {}) =>
  Effect.gen(function*() {
    const file = yield* locate(dir, explicit)
    const raw = file === null ? {} : yield* readRaw(file)
    const base = file === null ? path.resolve(dir) : projectDir(file)
    const isObject = typeof raw === "object" && raw !== null && !Array.isArray(raw)
    if (!isObject) return yield* decode(file ?? "config", raw, base)
    const overridden = yield* applyEnvironment(file ?? "no config file", raw as Record<string, unknown>, options.assume)
    const loaded = yield* decode(file ?? "the environment", overridden, base)
    return { ...loaded, file }
  })
