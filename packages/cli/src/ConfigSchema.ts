/**
 * What a config file may hold: `FlottaConfig` (what `defineConfig` checks at compile time) and `FileSchema`, the
 * one Schema that decodes it at run time (and from which docs/reference/config.md is generated); the error that
 * names the file, the path of the bad field and what was expected.
 */
import * as ClusterConfig from "@flotta/cluster/ClusterConfig"
import { exact } from "@flotta/core/Decode"
import * as Otlp from "@flotta/core/Otlp"
import * as Spec from "@flotta/core/Spec"
import * as DashboardConfig from "@flotta/dashboard/DashboardConfig"
import * as McpConfig from "@flotta/mcp/McpConfig"
import * as Routine from "@flotta/scheduler/Routine"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import * as WebhooksConfig from "@flotta/webhooks/WebhooksConfig"
import { Schema } from "effect"
import { StoreSchema } from "./StoreTarget.js"

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
  /** Live claude processes at most; past it the session idle the longest hibernates (default: from the memory). */
  readonly maxLive?: number
  /** A session idle this many milliseconds hibernates (default: only when maxLive needs the room). */
  readonly hibernateAfter?: number
  /** Past this percentage of its context window after a turn, a session's next turn is a compaction. */
  readonly autoCompactAt?: number
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
  /** Webhooks told of chosen events: `[{ "url", "events": ["run_finished", ...], "secret"?, "format"? }]`. */
  readonly notify?: typeof WebhooksConfig.NotifySection.Encoded
  /** `POST /hooks/github` fires routines or runs: `{ "secret", "on": [{ "event", "routine" | "run", ... }] }`. */
  readonly github?: typeof WebhooksConfig.GithubSection.Encoded
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

/** An optional field described for the config reference (docs/reference/config.md); `shape`: see `ShapeAnnotationId`. */
const field = <A, I>(schema: Schema.Schema<A, I>, description: string, shape?: Schema.Schema.All) =>
  exact(schema).annotations({ description, ...(shape === undefined ? {} : { [Spec.ShapeAnnotationId]: shape }) })

/** A section that its own module decodes later (and reports on there): any object here, documented as `shape`. */
const sectionField = (description: string, shape: Schema.Schema.All) =>
  field(Schema.Record({ key: Schema.String, value: Schema.Unknown }), description, shape)

/** A list whose entries are checked one by one later (a bad one is skipped): documented as a list of `entry`. */
const entriesField = (description: string, entry: Schema.Schema.Any) =>
  field(Schema.Array(Schema.Unknown), description, Schema.Array(entry))

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
  maxLive: field(
    Schema.Number.pipe(Schema.int(), Schema.positive()),
    "Live claude processes at most (default: half the machine's memory at 125 MiB a process, at least 4). A start " +
      "past it first hibernates the session idle the longest: its process ends, its conversation stays, and a " +
      "prompt wakes it with `--resume`."
  ),
  hibernateAfter: field(
    Schema.Number.pipe(Schema.int(), Schema.positive()),
    "A session idle this many milliseconds hibernates (default: none; sessions sleep only when `maxLive` needs " +
      "the room)."
  ),
  autoCompactAt: field(
    Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(100)),
    "A percentage of the context window: when a turn ends with a session's context fuller than that, a compaction " +
      "(`/compact`) is queued before its next prompt; an agent's own `autoCompactAt` wins (default: none, only the " +
      "CLI's own compaction near the window)."
  ),
  fleetDefaults: sectionField(
    "Agent fields (any but `name`) merged under every agent entry; the entry's own fields win.",
    Spec.Spec
  ),
  agents: entriesField(
    "The declared fleet: `session` entries start with `serve` and `repl`; `run` entries are templates for runs. " +
      "A bad entry is reported with the path of its bad field and skipped; the rest boots.",
    Spec.Spec
  ),
  mcp: field(
    McpConfig.FileSection,
    "Serve the fleet over MCP (Streamable HTTP) at `http://127.0.0.1:4099/mcp`. Absent: no port is opened."
  ),
  dashboard: field(
    DashboardConfig.FileSection,
    "Serve the live dashboard: at `/` of the MCP server (`{}`), or on a `port` of its own. Absent: none."
  ),
  schedule: sectionField(
    "Working hours: switches the scheduler on. Absent: no timer runs.",
    SchedulerConfig.ScheduleSection
  ),
  routines: entriesField(
    "Recurring work for the scheduler (with a `schedule`; without one, none runs). A bad routine is reported and " +
      "skipped, as is one whose `template` or `agent` is not a run template or session of `agents`.",
    Routine.RoutineSchema
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
  notify: field(
    WebhooksConfig.NotifySection,
    "Notifications: each event a target names is POSTed to its `url` (the report entry as JSON, or a Slack " +
      "message), signed when it has a `secret`, at least once and in order, through an outbox in the store. " +
      "Absent: nothing is sent."
  ),
  github: field(
    WebhooksConfig.GithubSection,
    "`POST /hooks/github` on the fleet's HTTP server (it needs an `mcp` or `dashboard` section): GitHub's " +
      "deliveries, signed with `secret`, fire the routines and run templates `on` maps them to (a mapping naming " +
      "one the config does not have is reported and skipped). Absent: none."
  ),
  // Checked by `readStore`, which names the bad field within it (a union's own message would not).
  store: field(
    Schema.Unknown,
    "Where `serve` and `repl` keep the fleet's state, so that a restart brings every agent back. Absent: " +
      "`{ \"sqlite\": \".flotta/state.db\" }` in the project directory. `run` runs in memory and records each run " +
      "here as it ends (through the store's inbox, `<file>.inbox/` beside an SQLite file); `mcp` keeps it in memory.",
    StoreSchema
  )
}).annotations({
  description: "`flotta.config.json` (JSON with comments) in the project directory, or `.flotta/config.json`, or " +
    "`flotta.config.ts` exporting `defineConfig({...})` from `flotta` (type-checked), or the file `--config` names. " +
    "It is decoded once, by one Schema, into one section per layer; a section that is absent switches its layer " +
    "off. An error names the file, the path of the bad field and what was expected (`flotta.config.json: " +
    "mcp.port: expected a number, got \"eighty\"`, `agents[2].permision: unknown field; did you mean " +
    "\"permission\"?`). One in an entry of `agents`, `routines` or `github.on` skips that entry (`serve` and `repl` " +
    "say so and boot the rest; `flotta doctor` fails with exit code 3); any other stops the command."
})
