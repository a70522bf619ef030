/**
 * The declarative unit: one agent described as data, with defaults, and the fleet read from config.
 * Validation never throws: a bad entry is reported with the path of its bad field and skipped, so one typo
 * never stops the rest of the fleet from booting.
 */
import { Either, Predicate, Schema } from "effect"
import * as AgentOptions from "./AgentOptions.js"
import { NAME_PATTERN } from "./AgentView.js"
import * as Decode from "./Decode.js"
import { definedFields } from "./Fields.js"
import * as Permission from "./Permission.js"
import * as Sandbox from "./Sandbox.js"

const PositiveMillis = Schema.Number.pipe(Schema.int(), Schema.positive())

// Each field's `description` is the config reference's prose (docs/reference/config.md, `npm run docs`).
export const Spec = Schema.Struct({
  name: Schema.propertySignature(Schema.String.pipe(
    Schema.pattern(NAME_PATTERN, {
      message: () => "a name of 1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit"
    })
  )).annotations({ description: "The agent's name, unique in the fleet: every call addresses the agent by it." }),
  lifecycle: Schema.optionalWith(Schema.Literal("session", "run"), { default: () => "session" as const }).annotations({
    description: "`session`: a conversation across many turns, started by `serve` and `repl`. `run`: a template " +
      "for single-shot runs (`run({ template })`, MCP `flotta_run { template }`), never started at boot."
  }),
  role: Schema.optionalWith(Schema.Literal("member", "manager"), { default: () => "member" as const }).annotations({
    description: "A label carried in the agent's info; flotta gives it no meaning of its own."
  }),
  model: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { default: () => "sonnet" }).annotations({
    description: "The model name or alias the `claude` child runs (`--model`)."
  }),
  permission: Schema.optionalWith(Permission.PermissionData, { default: () => "read_only" as const }).annotations({
    description: "What the agent may do: `\"read_only\"` (Read, Glob, Grep), `\"full\"`, `{ \"allow\": [tools] }`, " +
      "`{ \"allow\", \"ask\" }` (the `ask` tools wait for a human's approval) or `\"ask\"`. A write-capable " +
      "`session` is refused: write work belongs in a `run`."
  }),
  cwd: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { default: () => "." }).annotations({
    description: "The working directory, relative to where the command runs."
  }),
  systemPrompt: Schema.optional(Schema.String).annotations({ description: "Replaces the CLI's system prompt." }),
  appendSystemPrompt: Schema.optional(Schema.String).annotations({
    description: "Appended to the CLI's system prompt."
  }),
  timeout: Schema.optionalWith(PositiveMillis, { default: () => 180_000 }).annotations({
    description: "Per turn, in milliseconds (a run's whole time, since a run is one turn); the turn is " +
      "interrupted when it passes (`TurnTimeout`)."
  }),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })).annotations({
    description: "Added to the environment the child inherits."
  }),
  sandbox: Schema.optional(Sandbox.SandboxData).annotations({
    description: "Runs the agent's Bash in the claude CLI's OS sandbox (bubblewrap and socat on Linux, Seatbelt on " +
      "macOS). `true`: it writes only in its cwd (a run's worktree) and reaches no network. " +
      "`{ \"network\": { \"allow\": [hosts] }, \"writable\": [paths] }` adds hosts (`github.com`, " +
      "`*.github.com`, `127.0.0.1:8080`) and paths (relative to `cwd`). Write, Edit and WebFetch are held to the " +
      "same paths and hosts. `false` turns a `fleetDefaults` sandbox off. A sandboxed agent never starts " +
      "unsandboxed (`SandboxUnavailable`); it only narrows what `permission` allows."
  }),
  autoCompactAt: Schema.optional(AgentOptions.Percent).annotations({
    description: "A percentage of the context window: when a turn ends with the session's context fuller than " +
      "that, a compaction (`/compact`) is queued before its next prompt (the top-level `autoCompactAt` otherwise)."
  }),
  labels: Schema.optional(AgentOptions.Labels).annotations({
    description: "Labels (`{ \"team\": \"a\" }`), kept with the agent (or each run of a template) and the cost of " +
      "its turns: `costs --by label:team` groups spend by one, `list --label team=a` and `runs --label` filter by them."
  }),
  stream: Schema.optional(Schema.Boolean).annotations({
    description: "Streams the agent's text as the model writes it (the CLI's `--include-partial-messages`): " +
      "watchers and the dashboard see each piece live (`text_delta` entries, never kept). Costs a little per turn."
  }),
  // Fields a `run` template uses; a session ignores them.
  prompt: Schema.optional(Schema.String).annotations({
    description: "A `run` template's task (a run's own prompt wins)."
  }),
  worktree: Schema.optional(Schema.Union(Schema.Boolean, Schema.String)).annotations({
    description: "A `run` template: `true` isolates each run in `<repo>/.claude/worktrees/<run name>` on branch " +
      "`worktree-<run name>`; a string names the worktree. A session may not have one."
  }),
  cleanup: Schema.optional(Schema.Boolean).annotations({
    description: "A `run` template: after a successful run, commit what it left and remove its worktree (the " +
      "branch stays)."
  }),
  jsonSchema: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "A `run` template: a JSON Schema the result's `structuredOutput` conforms to."
  }),
  maxTurns: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())).annotations({
    description: "A `run` template: model calls at most (`MaxTurnsReached`)."
  }),
  maxBudgetUsd: Schema.optional(Schema.Number.pipe(Schema.positive())).annotations({
    description: "Dollars at most (`BudgetExceeded`). A `run` template: the run's. A session: its turns', per " +
      "`budgetPer`; once they have spent it, a new turn fails with `BudgetExceeded` before it is sent (a turn in " +
      "flight finishes)."
  }),
  budgetPer: Schema.optional(AgentOptions.BudgetPer).annotations({
    description: "A session's `maxBudgetUsd` is per UTC `day`, or for its `life` (default)."
  }),
  attempts: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 16))).annotations({
    description: "A `run` template: best of N. This many attempts at once, each in its own worktree, each told " +
      "its number (`FLOTTA_ATTEMPT`, `{{attempt}}` in the prompt); the winner is picked by `pick` among those " +
      "that pass `verify` (`NoAttemptPassed` when none does)."
  }),
  pick: Schema.optional(Schema.Literal("first", "cheapest")).annotations({
    description: "A `run` template with attempts: `first` (default) takes the first to pass and interrupts the " +
      "rest; `cheapest` lets all finish and takes the cheapest that passed."
  }),
  verify: Schema.optional(Schema.Struct({
    checks: Schema.NonEmptyArray(Schema.String.pipe(Schema.minLength(1))),
    timeout: Decode.exact(PositiveMillis)
  })).annotations({
    description: "A `run` template: shell checks each attempt must pass in its worktree (`{ \"checks\": [...], " +
      "\"timeout\": ms per check }`)."
  }),
  keepAll: Schema.optional(Schema.Boolean).annotations({
    description: "A `run` template with attempts: keep every attempt's worktree (by default the losers' are " +
      "removed, what they did committed to their branches)."
  })
}).annotations({ identifier: "Spec" })
export type Spec = typeof Spec.Type
export type SpecInput = typeof Spec.Encoded

/**
 * On a config field that its own reader checks (entry by entry, or with messages of its own), the Schema of what
 * it accepts: the config reference documents the field by it.
 */
export const ShapeAnnotationId: unique symbol = Symbol.for("@flotta/core/Spec/Shape")

export interface Rejected {
  /** Where the bad entry sits, e.g. `agents[2]`. */
  readonly entry: string
  readonly name: string | null
  /** The path of the bad field, e.g. `agents[2].permission`. */
  readonly path: string
  readonly message: string
}

export interface Fleet {
  readonly sessions: ReadonlyArray<Spec>
  /** `run` entries: templates for runs, never started at boot. */
  readonly templates: ReadonlyArray<Spec>
  readonly rejected: ReadonlyArray<Rejected>
}

/** Validates one entry with the fleet defaults merged under it (the entry's own keys win). */
export const validate = (
  input: unknown,
  defaults: Record<string, unknown> = {},
  entry = "spec"
): Either.Either<Spec, ReadonlyArray<Rejected>> => {
  if (!Predicate.isRecord(input)) {
    return Either.left([{ entry, name: null, path: entry, message: "expected an object describing an agent" }])
  }
  const name = Predicate.isString(input["name"]) ? input["name"] : null
  // A field the entry took from the fleet defaults is named where it was written.
  const at = (field: string) => !(field in input) && field in defaults ? `fleetDefaults.${field}` : `${entry}.${field}`
  const fieldOf = (path: string) => /^[^.[]*/.exec(path.slice(entry.length + 1))![0]
  const decoded = Decode.decodeAt(Spec, { ...defaults, ...input }, entry)
  if (Either.isLeft(decoded)) {
    return Either.left(decoded.left.map((issue) => {
      const field = fieldOf(issue.path)
      return {
        entry,
        name,
        path: at(field) + issue.path.slice(entry.length + 1 + field.length),
        message: issue.message
      }
    }))
  }
  const spec = decoded.right
  const refuse = (field: string, message: string) => Either.left([{ entry, name, path: at(field), message }])
  if (spec.lifecycle === "session" && spec.worktree !== undefined && spec.worktree !== false) {
    return refuse(
      "worktree",
      "a session has no worktree (it converses in its cwd): worktrees belong to `run` entries (lifecycle: \"run\")"
    )
  }
  if (spec.lifecycle === "session" && Permission.canWrite(spec.permission)) {
    return refuse(
      "permission",
      "a write-capable session is refused: a session has no worktree, so write work belongs in a " +
        "`run` entry (lifecycle: \"run\", worktree: true), or under `ask`, where a human approves each write " +
        "({ \"allow\": [\"Read\"], \"ask\": [\"Write\"] })"
    )
  }
  return Either.right(spec)
}

/** Any failure of `schema` says `message`: for the sections whose shape has one plain rule. */
const saying = (message: string) => ({ message: () => ({ message, override: true }) })

const ConfigObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
  Schema.filter((config) => !Array.isArray(config))
).annotations(saying("expected an object"))

/** `fleetDefaults`: agent fields, merged under every entry (a name would make every entry the same agent). */
const FleetDefaults = ConfigObject.pipe(Schema.filter((fields) => !("name" in fields))).annotations(
  saying("expected an object of agent fields (without a name); defaults were ignored")
)

const AgentEntries = Schema.Array(Schema.Unknown).annotations(saying("expected an array of agent entries"))

/** A section decoded at `path`; what is wrong with it, as rejected entries. */
const section = <A, I>(schema: Schema.Schema<A, I>, input: unknown, path: string) =>
  Either.mapLeft(
    Decode.decodeAt(schema, input, path),
    (issues): Array<Rejected> => issues.map((issue) => ({ entry: path, name: null, ...issue }))
  )

/** Each field of the fleet defaults checked as an entry's field would be (a name stands in for the entry's own). */
const readDefaults = (given: unknown): Either.Either<Record<string, unknown>, Array<Rejected>> =>
  Either.flatMap(
    section(FleetDefaults, given, "fleetDefaults"),
    (fields) =>
      Either.mapBoth(Decode.decodeAt(Spec, { ...fields, name: "defaults" }, "fleetDefaults"), {
        onLeft: (issues) =>
          issues.map((issue): Rejected => ({
            entry: "fleetDefaults",
            name: null,
            path: issue.path,
            message: issue.message
          })),
        onRight: () => fields
      })
  )

/**
 * A rejected entry as a line: its path and what was wrong, with the entry first when the problem lies elsewhere
 * (`agents[2]: fleetDefaults.sandbox: ...`).
 */
export const describeRejected = (rejected: Rejected): string =>
  rejected.path === rejected.entry || rejected.path.startsWith(`${rejected.entry}.`) ||
    rejected.path.startsWith(`${rejected.entry}[`)
    ? `${rejected.path}: ${rejected.message}`
    : `${rejected.entry}: ${rejected.path}: ${rejected.message}`

/**
 * Reads `{ fleetDefaults, agents }` from a config object. Bad defaults are reported at their own paths and ignored;
 * a bad entry is reported and skipped.
 */
export const readFleet = (config: unknown): Fleet => {
  const rejected: Array<Rejected> = []
  const sessions: Array<Spec> = []
  const templates: Array<Spec> = []
  const root = section(ConfigObject, config, "config")
  if (Either.isLeft(root)) return { sessions, templates, rejected: root.left }
  const given = root.right["fleetDefaults"]
  const defaults = given === undefined ?
    {} :
    Either.getOrElse(readDefaults(given), (bad) => {
      rejected.push(...bad)
      return {}
    })
  const agents = section(AgentEntries, root.right["agents"] ?? [], "agents")
  if (Either.isLeft(agents)) return { sessions, templates, rejected: [...rejected, ...agents.left] }
  const seen = new Map<string, string>()
  agents.right.forEach((input, index) => {
    const entry = `agents[${index}]`
    const result = validate(input, defaults, entry)
    if (Either.isLeft(result)) {
      rejected.push(...result.left)
      return
    }
    const spec = result.right
    const first = seen.get(spec.name)
    if (first !== undefined) {
      rejected.push({
        entry,
        name: spec.name,
        path: `${entry}.name`,
        message: `duplicate name "${spec.name}" (${first} has it already)`
      })
      return
    }
    seen.set(spec.name, entry)
    if (spec.lifecycle === "session") sessions.push(spec)
    else templates.push(spec)
  })
  return { sessions, templates, rejected }
}

/**
 * The fields of a spec that every agent takes, as `spawn` and `run` take them (absent fields left out); typed as
 * the agent options' Schema, so an entry's field that takes other values than the option fails the build.
 */
export const agentOptions = (spec: Spec): AgentOptions.DataOptions & Pick<Spec, "cwd" | "model" | "permission"> => ({
  cwd: spec.cwd,
  model: spec.model,
  permission: spec.permission,
  timeout: spec.timeout,
  ...definedFields(spec, ["systemPrompt", "appendSystemPrompt", "env", "sandbox", "autoCompactAt", "stream", "labels"])
})

/** A `run` template's fields, as `run` takes them (`Run.RunOptions`; the run's own options win over them). */
export const runOptions = (spec: Spec) => ({
  ...agentOptions(spec),
  ...definedFields(spec, [
    "prompt",
    "worktree",
    "cleanup",
    "jsonSchema",
    "maxTurns",
    "maxBudgetUsd",
    "attempts",
    "pick",
    "verify",
    "keepAll"
  ])
})

/**
 * What is wrong with `name` as a `lifecycle` entry of the declared fleet (a template or session another
 * package starts by name), or `undefined` when the fleet has it.
 */
export const referenceProblem = (fleet: Fleet, name: string, lifecycle: Spec["lifecycle"]): string | undefined => {
  const [wanted, other] = lifecycle === "run" ? [fleet.templates, fleet.sessions] : [fleet.sessions, fleet.templates]
  const what = lifecycle === "run" ? "run template" : "session"
  if (wanted.some((spec) => spec.name === name)) return undefined
  if (other.some((spec) => spec.name === name)) {
    return lifecycle === "run"
      ? `"${name}" is a session; this needs a run template (an agent entry with lifecycle: "run")`
      : `"${name}" is a run template; this needs a session (an agent entry with lifecycle: "session")`
  }
  const skipped = fleet.rejected.find((r) => r.name === name && r.entry.startsWith("agents["))
  if (skipped !== undefined) return `the ${what} "${name}" is skipped itself (${skipped.entry} is invalid)`
  return Decode.unknownName(what, name, wanted.map((spec) => spec.name), "agents")
}
