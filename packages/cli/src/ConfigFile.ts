/**
 * The config file: found at `--config PATH`, else `flotta.config.json`, `.flotta/config.json` or
 * `flotta.config.ts` (default export, `defineConfig({...})` for type checking) in the project directory.
 *
 * It is decoded once, by one Schema (`FileSchema`, in ConfigSchema), into one section per layer: `fleet` for
 * `Flotta.layer`, `store` for the engine's `Store` (StoreTarget), `mcp` for `McpServer.layer`, `dashboard` for
 * `Dashboard.layer`, `schedule` for `Scheduler.layer`, `notify` and `github` for `Webhooks.layer` (an absent
 * section is `undefined`, and its layer is then `Layer.empty`; an absent `store` is the command's default). The
 * environment overrides the file through one mapping (`ENVIRONMENT`, in ConfigEnvironment). Errors name the file
 * (or the variable), the path of the bad field and what was expected, in words. A bad top-level field (the fleet
 * defaults' included) stops the command; a bad entry is skipped, and the rest boots: an agent, a routine (also one
 * naming a run template or session that `agents` does not declare, and every routine when there is no `schedule`),
 * a GitHub mapping naming a routine or run template that is not there. `skipped` lists them all, for `serve` and
 * `repl` to print and for `doctor` to fail on.
 */
import { FileSystem } from "@effect/platform"
import * as ClusterConfig from "@flotta/cluster/ClusterConfig"
import { fieldIssues } from "@flotta/core/Decode"
import * as Otlp from "@flotta/core/Otlp"
import * as Spec from "@flotta/core/Spec"
import * as DashboardConfig from "@flotta/dashboard/DashboardConfig"
import * as McpConfig from "@flotta/mcp/McpConfig"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import * as WebhooksConfig from "@flotta/webhooks/WebhooksConfig"
import { Effect, Either, Option, Predicate, Schema } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { applyEnvironment } from "./ConfigEnvironment.js"
import { ConfigFileError, FileSchema } from "./ConfigSchema.js"
import { readStore, type StoreSection } from "./StoreTarget.js"

// The config's public face stays here: `@flotta/cli/ConfigFile` is what configs and tools import.
export { applyEnvironment, ENVIRONMENT, type Override } from "./ConfigEnvironment.js"
export { ConfigFileError, defineConfig, FileSchema, type FlottaConfig, type StoreFileValue } from "./ConfigSchema.js"
export {
  DEFAULT_STORE_FILE,
  readStore,
  readStoreTarget,
  type StoreIssue,
  StoreSchema,
  type StoreSection
} from "./StoreTarget.js"

export const CONFIG_FILES: ReadonlyArray<string> = [
  "flotta.config.json",
  path.join(".flotta", "config.json"),
  "flotta.config.ts"
]

const decodeFile = Schema.decodeUnknownEither(FileSchema, { errors: "first", onExcessProperty: "error" })

/** The engine's section: its settings and the declared fleet, validated entry by entry. */
export interface FleetSection {
  readonly claudePath?: string
  readonly maxConcurrentStarts?: number
  /** Milliseconds a tool call waits for a human's approval. */
  readonly approvalTimeout?: number
  readonly maxLive?: number
  /** Milliseconds idle before a session hibernates. */
  readonly hibernateAfter?: number
  readonly autoCompactAt?: number
  readonly fleet: Spec.Fleet
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
  /** The config's `notify`: the webhooks told of chosen events. */
  readonly notify: ReadonlyArray<WebhooksConfig.NotifyTarget> | undefined
  /** The config's `github`: `POST /hooks/github` on the fleet's HTTP server (its valid mappings). */
  readonly github: WebhooksConfig.GithubSection | undefined
  /** Every entry skipped, with its path and why, in the file's order: agents, routines, GitHub mappings. */
  readonly skipped: ReadonlyArray<Spec.Rejected>
}

/** The config file to use: the explicit one (which must exist), or the first of CONFIG_FILES in `dir`. */
export const locate = Effect.fn("ConfigFile.locate")(function*(dir: string, explicit?: string) {
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
 * A TypeScript config, so users get type checking without a build step. A Node that strips types itself (22.18,
 * 23.6 and later) imports it as it is; an older one compiles it with tsx, when the project (or this install) has
 * it: `flotta` itself does not depend on tsx, whose esbuild wants an install script. It is loaded on the process's
 * own loader (not a namespaced one), so that the config's `import { defineConfig } from "@flotta/cli"` gets the
 * modules already loaded, not a second copy; and once per file and process. Under tsx, a CommonJS project's
 * config needs a fresh URL (else tsx's require of it is a cycle on Node 20).
 */
const typeScriptConfigs = new Map<string, Promise<{ readonly default?: unknown }>>()
const importTypeScript = (file: string) => {
  const plain = pathToFileURL(file).href
  const typeStripping = (process.features as { readonly typescript?: unknown }).typescript
  const loaded = typeScriptConfigs.get(file) ?? (typeof typeStripping === "string"
    ? import(plain) as Promise<{ readonly default?: unknown }>
    : import("tsx/esm/api").then(
      ({ register }) => {
        const unregister = register()
        const url = `${plain}?t=${process.hrtime.bigint()}`
        return (import(url) as Promise<{ readonly default?: unknown }>).finally(() => unregister())
      },
      () => {
        throw new Error(
          `this Node (${process.version}) cannot strip TypeScript's types: use Node 22.18 or later, install tsx ` +
            "in the project (npm i -D tsx), or write the config as flotta.config.json"
        )
      }
    ))
  typeScriptConfigs.set(file, loaded)
  return loaded
}

const readRaw = (file: string) =>
  Effect.gen(function*() {
    if (file.endsWith(".ts") || file.endsWith(".mts")) {
      const module = yield* Effect.tryPromise({
        try: () => importTypeScript(file),
        catch: (e) =>
          new ConfigFileError({ file, path: "", reason: `cannot load: ${e instanceof Error ? e.message : String(e)}` })
      })
      const value = module.default
      return Predicate.hasProperty(value, "default") ? value.default : value
    }
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((e) => new ConfigFileError({ file, path: "", reason: `cannot read: ${e.message}` }))
    )
    return yield* Effect.try({
      try: (): unknown => JSON.parse(stripComments(text)),
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
  if (!Predicate.isRecord(raw)) {
    return Either.left(new ConfigFileError({ file, path: "", reason: "expected an object at the top level" }))
  }
  const decoded = decodeFile(raw)
  if (Either.isLeft(decoded)) {
    const [issue] = fieldIssues(decoded.left)
    return Either.left(new ConfigFileError({ file, path: issue?.path ?? "", reason: issue?.message ?? "invalid" }))
  }
  const config = decoded.right
  const store = config.store === undefined ? Either.right(undefined) : readStore(config.store, dir)
  if (Either.isLeft(store)) {
    return Either.left(new ConfigFileError({ file, path: store.left.path, reason: store.left.reason }))
  }
  const fleet = Spec.readFleet({ fleetDefaults: config.fleetDefaults, agents: config.agents })
  // The defaults are a section of their own: a bad one would change every agent, so it stops the command.
  const defaults = fleet.rejected.find((r) => r.entry === "fleetDefaults")
  if (defaults !== undefined) {
    return Either.left(new ConfigFileError({ file, path: defaults.path, reason: defaults.message }))
  }
  const schedule = SchedulerConfig.read({ schedule: config.schedule, routines: config.routines }, fleet)
  if (Either.isLeft(schedule)) {
    // Its reason names each bad field's path, the first one's too: said once.
    const { path, reason } = schedule.left
    return Either.left(
      new ConfigFileError({
        file,
        path,
        reason: reason.startsWith(`${path}: `) ? reason.slice(path.length + 2) : reason
      })
    )
  }
  const scheduler = Option.getOrUndefined(schedule.right)
  const unscheduled: Array<Spec.Rejected> = scheduler === undefined && (config.routines?.length ?? 0) > 0
    ? [{
      entry: "routines",
      name: null,
      path: "routines",
      message: "there is no schedule section, so no routine runs: add one " +
        "(\"schedule\": { \"timezone\": \"utc\", \"hours\": { \"mon\": [[\"09:00\", \"17:00\"]] } })"
    }]
    : []
  const mcp = McpConfig.fromFile(config.mcp)
  const dashboard = DashboardConfig.fromFile(config.dashboard)
  if (config.github !== undefined && mcp === undefined && dashboard === undefined) {
    return Either.left(
      new ConfigFileError({
        file,
        path: "github",
        reason: "the hooks need an HTTP server to listen on: add an mcp section (or a dashboard section)"
      })
    )
  }
  const github = config.github === undefined ? undefined : WebhooksConfig.checkMappings(config.github, {
    routine: (name) => SchedulerConfig.routineProblem(scheduler, name),
    run: (name) => Spec.referenceProblem(fleet, name, "run")
  })
  return Either.right({
    file,
    dir,
    fleet: {
      ...(config.claudePath === undefined ? {} : { claudePath: config.claudePath }),
      ...(config.maxConcurrentStarts === undefined ? {} : { maxConcurrentStarts: config.maxConcurrentStarts }),
      ...(config.approvalTimeout === undefined ? {} : { approvalTimeout: config.approvalTimeout }),
      ...(config.maxLive === undefined ? {} : { maxLive: config.maxLive }),
      ...(config.hibernateAfter === undefined ? {} : { hibernateAfter: config.hibernateAfter }),
      ...(config.autoCompactAt === undefined ? {} : { autoCompactAt: config.autoCompactAt }),
      fleet
    },
    store: store.right,
    mcp,
    dashboard,
    schedule: scheduler,
    telemetry: config.telemetry,
    cluster: config.cluster,
    notify: config.notify,
    github: github?.section,
    skipped: [...fleet.rejected, ...(scheduler?.rejected ?? unscheduled), ...(github?.rejected ?? [])]
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
  cluster: undefined,
  notify: undefined,
  github: undefined,
  skipped: []
})

/**
 * Finds, reads and decodes the config, with the environment's overrides; no file is an empty config.
 * `assume` lists sections to treat as present (empty) when the file lacks them, so the environment applies.
 */
export const load = Effect.fn("ConfigFile.load")(
  function*(dir: string, explicit?: string, options: { readonly assume?: ReadonlyArray<string> } = {}) {
    const file = yield* locate(dir, explicit)
    const raw = file === null ? {} : yield* readRaw(file)
    const base = file === null ? path.resolve(dir) : projectDir(file)
    if (!Predicate.isRecord(raw)) return yield* decode(file ?? "config", raw, base)
    const overridden = yield* applyEnvironment(file ?? "no config file", raw, options.assume)
    const loaded = yield* decode(file ?? "the environment", overridden, base)
    return { ...loaded, file }
  }
)
