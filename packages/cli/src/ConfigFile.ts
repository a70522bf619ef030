/**
 * The config file: found at `--config PATH`, else `flotta.config.json`, `.flotta/config.json` or
 * `flotta.config.ts` (default export, `defineConfig({...})` for type checking) in the project directory.
 *
 * It is decoded once, by one Schema (`FileSchema`), into one section per layer: `fleet` for `Flotta.layer`,
 * `mcp` for `McpServer.layer`, `schedule` for `Scheduler.layer` (an absent section is `undefined`, and its
 * layer is then `Layer.empty`). The environment overrides the file through one mapping (`ENVIRONMENT`).
 * Errors name the file (or the variable), the path of the bad field and what was expected. A bad top-level
 * field stops the command; a bad agent or routine entry is reported and skipped, and the rest boots.
 */
import { FileSystem } from "@effect/platform"
import * as Spec from "@flotta/core/Spec"
import * as McpConfig from "@flotta/mcp/McpConfig"
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
  /** Merged under every agent entry; the entry's own fields win. */
  readonly fleetDefaults?: Partial<Omit<Spec.SpecInput, "name">>
  /** `session` entries start with `serve` and `repl`; `run` entries are templates. */
  readonly agents?: ReadonlyArray<Spec.SpecInput>
  /** Serve the fleet over MCP (Streamable HTTP on 127.0.0.1). */
  readonly mcp?: McpConfig.FileSection
  /** Working hours: switches the scheduler on. */
  readonly schedule?: Readonly<Record<string, unknown>>
  /** Recurring work for the scheduler. */
  readonly routines?: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** Type-checks a `flotta.config.ts`. */
export const defineConfig = (config: FlottaConfig): FlottaConfig => config

export const CONFIG_FILES: ReadonlyArray<string> = [
  "flotta.config.json",
  path.join(".flotta", "config.json"),
  "flotta.config.ts"
]

const exact = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })

/** The whole file, every section. Agent and routine entries are checked one by one (a bad one is skipped). */
export const FileSchema = Schema.Struct({
  $schema: exact(Schema.String),
  claudePath: exact(Schema.String.pipe(Schema.minLength(1))),
  maxConcurrentStarts: exact(Schema.Number.pipe(Schema.int(), Schema.positive())),
  fleetDefaults: exact(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  agents: exact(Schema.Array(Schema.Unknown)),
  mcp: exact(McpConfig.FileSection),
  schedule: exact(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  routines: exact(Schema.Array(Schema.Unknown))
})

const decodeFile = Schema.decodeUnknownEither(FileSchema, { errors: "first", onExcessProperty: "error" })

/** The engine's section: its settings and the declared fleet, validated entry by entry. */
export interface FleetSection {
  readonly claudePath?: string
  readonly maxConcurrentStarts?: number
  readonly fleet: Spec.Fleet
}

/** A decoded config: one section per layer; `undefined` when the file does not have it. */
export interface LoadedConfig {
  /** The file read, or null when there is none (an empty config). */
  readonly file: string | null
  readonly fleet: FleetSection
  readonly mcp: McpConfig.McpConfigInput | undefined
  readonly schedule: SchedulerConfig.SchedulerConfig | undefined
}

/** One environment variable and the config field it overrides. */
export interface Override {
  readonly variable: string
  /** The field: top level, or `[section, key]` (applied only when the file has that section). */
  readonly path: readonly [string] | readonly [string, string]
  readonly type: "integer" | "string"
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
  }
]

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
      if (override.type === "integer") {
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

const readRaw = (file: string) =>
  Effect.gen(function*() {
    if (file.endsWith(".ts") || file.endsWith(".mts")) {
      // A TypeScript config is compiled on the fly (tsx), so users get type checking without a build step.
      const module = yield* Effect.tryPromise({
        try: () =>
          // Registered on the process's own loader (not a namespaced one), so that the config's
          // `import { defineConfig } from "@flotta/cli"` gets the modules already loaded, not a second copy.
          import("tsx/esm/api").then(({ register }) => {
            const unregister = register()
            const url = `${pathToFileURL(file).href}?t=${process.hrtime.bigint()}`
            return (import(url) as Promise<{ readonly default?: unknown }>).finally(() => unregister())
          }),
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

/** Decodes a config object (after the environment's overrides) into its sections; `file` names it in errors. */
export const decode = (file: string, raw: unknown): Either.Either<LoadedConfig, ConfigFileError> => {
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
  const schedule = SchedulerConfig.read({ schedule: config.schedule, routines: config.routines })
  if (Either.isLeft(schedule)) {
    return Either.left(new ConfigFileError({ file, path: schedule.left.path, reason: schedule.left.reason }))
  }
  return Either.right({
    file,
    fleet: {
      ...(config.claudePath === undefined ? {} : { claudePath: config.claudePath }),
      ...(config.maxConcurrentStarts === undefined ? {} : { maxConcurrentStarts: config.maxConcurrentStarts }),
      fleet: Spec.readFleet({ fleetDefaults: config.fleetDefaults, agents: config.agents })
    },
    mcp: McpConfig.fromFile(config.mcp),
    schedule: Option.getOrUndefined(schedule.right)
  })
}

export const empty: LoadedConfig = {
  file: null,
  fleet: { fleet: { sessions: [], templates: [], rejected: [] } },
  mcp: undefined,
  schedule: undefined
}

/**
 * Finds, reads and decodes the config, with the environment's overrides; no file is an empty config.
 * `assume` lists sections to treat as present (empty) when the file lacks them, so the environment applies.
 */
export const load = (dir: string, explicit?: string, options: { readonly assume?: ReadonlyArray<string> } = {}) =>
  Effect.gen(function*() {
    const file = yield* locate(dir, explicit)
    const raw = file === null ? {} : yield* readRaw(file)
    const isObject = typeof raw === "object" && raw !== null && !Array.isArray(raw)
    if (!isObject) return yield* decode(file ?? "config", raw)
    const overridden = yield* applyEnvironment(file ?? "no config file", raw as Record<string, unknown>, options.assume)
    const loaded = yield* decode(file ?? "the environment", overridden)
    return { ...loaded, file }
  })
