/**
 * The config file: found at `--config PATH`, else `flotta.config.json`, `.flotta/config.json` or
 * `flotta.config.ts` (default export, `defineConfig({...})` for type checking) in the project directory.
 * Validation names the file, the path of the bad field and what was expected. A bad top-level field stops the
 * command; a bad agent or routine entry is reported and skipped, and the rest boots.
 */
import { FileSystem } from "@effect/platform"
import * as Spec from "@flotta/core/Spec"
import { Effect, Either, ParseResult, Schema } from "effect"
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
  readonly mcp?: {
    readonly port?: number
    readonly host?: string
    readonly token?: string
    readonly allowedOrigins?: ReadonlyArray<string>
    readonly allowedHosts?: ReadonlyArray<string>
    readonly enabled?: boolean
  }
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

const TopLevel = Schema.Struct({
  $schema: Schema.optional(Schema.String),
  claudePath: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  maxConcurrentStarts: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())),
  fleetDefaults: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  agents: Schema.optional(Schema.Array(Schema.Unknown)),
  mcp: Schema.optional(Schema.Struct({
    enabled: Schema.optional(Schema.Boolean),
    port: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(0, 65535))),
    host: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
    token: Schema.optional(Schema.String.pipe(Schema.minLength(16, { message: () => "at least 16 characters" }))),
    allowedOrigins: Schema.optional(Schema.Array(Schema.String)),
    allowedHosts: Schema.optional(Schema.Array(Schema.String)),
    maxSessions: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())),
    sessionIdleTimeoutMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive()))
  })),
  schedule: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  routines: Schema.optional(Schema.Array(Schema.Unknown))
})

const decodeTopLevel = Schema.decodeUnknownEither(TopLevel, { errors: "first", onExcessProperty: "error" })

export interface LoadedConfig {
  /** The file read, or null when there is none (an empty config). */
  readonly file: string | null
  /** The config as written, for the layers that read their own section. */
  readonly raw: Readonly<Record<string, unknown>>
  readonly fleet: Spec.Fleet
  readonly claudePath: string | undefined
  readonly maxConcurrentStarts: number | undefined
}

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

/** Checks a config object; `file` names it in errors. */
export const validate = (file: string, raw: unknown): Either.Either<LoadedConfig, ConfigFileError> => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return Either.left(new ConfigFileError({ file, path: "", reason: "expected an object at the top level" }))
  }
  const decoded = decodeTopLevel(raw)
  if (Either.isLeft(decoded)) {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
    return Either.left(
      new ConfigFileError({ file, path: formatPath(issue?.path ?? []), reason: issue?.message ?? "invalid" })
    )
  }
  const config = decoded.right
  return Either.right({
    file,
    raw: raw as Record<string, unknown>,
    fleet: Spec.readFleet({ fleetDefaults: config.fleetDefaults, agents: config.agents }),
    claudePath: config.claudePath,
    maxConcurrentStarts: config.maxConcurrentStarts
  })
}

export const empty: LoadedConfig = {
  file: null,
  raw: {},
  fleet: { sessions: [], templates: [], rejected: [] },
  claudePath: undefined,
  maxConcurrentStarts: undefined
}

/** The declarative fleet as `Flotta.boot` takes it: the defaults and the agent entries, as written. */
export const fleetOf = (config: LoadedConfig) => ({
  fleetDefaults: config.raw["fleetDefaults"],
  agents: Array.isArray(config.raw["agents"]) ? (config.raw["agents"] as ReadonlyArray<unknown>) : []
})

/** Finds, reads and validates the config; no file is an empty config. */
export const load = (dir: string, explicit?: string) =>
  Effect.gen(function*() {
    const file = yield* locate(dir, explicit)
    if (file === null) return empty
    const raw = yield* readRaw(file)
    return yield* validate(file, raw)
  })
