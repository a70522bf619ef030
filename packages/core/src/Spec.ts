/**
 * The declarative unit: one agent described as data, with defaults, and the fleet read from config.
 * Validation never throws: a bad entry is reported with the path of its bad field and skipped, so one typo
 * never stops the rest of the fleet from booting.
 */
import { Either, ParseResult, Schema } from "effect"
import * as Permission from "./Permission.js"
import { NAME_PATTERN } from "./Registry.js"

const PositiveMillis = Schema.Number.pipe(Schema.int(), Schema.positive())

export const Spec = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(NAME_PATTERN, {
      message: () => "a name of 1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit"
    })
  ),
  lifecycle: Schema.optionalWith(Schema.Literal("session", "run"), { default: () => "session" as const }),
  role: Schema.optionalWith(Schema.Literal("member", "manager"), { default: () => "member" as const }),
  model: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { default: () => "sonnet" }),
  permission: Schema.optionalWith(Permission.PermissionData, { default: () => "read_only" as const }),
  cwd: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { default: () => "." }),
  systemPrompt: Schema.optional(Schema.String),
  appendSystemPrompt: Schema.optional(Schema.String),
  /** Per-turn timeout in milliseconds. */
  timeout: Schema.optionalWith(PositiveMillis, { default: () => 180_000 }),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  // Fields a `run` template uses; a session ignores them.
  prompt: Schema.optional(Schema.String),
  worktree: Schema.optional(Schema.Union(Schema.Boolean, Schema.String)),
  cleanup: Schema.optional(Schema.Boolean),
  jsonSchema: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  maxTurns: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive())),
  maxBudgetUsd: Schema.optional(Schema.Number.pipe(Schema.positive()))
}).annotations({ identifier: "Spec" })
export type Spec = typeof Spec.Type
export type SpecInput = typeof Spec.Encoded

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

const decodeSpec = Schema.decodeUnknownEither(Spec, { errors: "all", onExcessProperty: "error" })

const formatPath = (base: string, path: ReadonlyArray<PropertyKey>) =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`), base)

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Validates one entry with the fleet defaults merged under it (the entry's own keys win). */
export const validate = (
  input: unknown,
  defaults: Record<string, unknown> = {},
  entry = "spec"
): Either.Either<Spec, ReadonlyArray<Rejected>> => {
  const name = isRecord(input) && typeof input["name"] === "string" ? input["name"] : null
  if (!isRecord(input)) {
    return Either.left([{ entry, name, path: entry, message: "expected an object describing an agent" }])
  }
  const merged = { ...defaults, ...input }
  const decoded = decodeSpec(merged)
  if (Either.isLeft(decoded)) {
    // A union reports one issue per member at the same path: say them once, as alternatives.
    const byPath = new Map<string, Array<string>>()
    for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
      const at = formatPath(entry, issue.path)
      const messages = byPath.get(at) ?? []
      if (!messages.includes(issue.message)) messages.push(issue.message)
      byPath.set(at, messages)
    }
    return Either.left([...byPath].map(([path, messages]) => ({ entry, name, path, message: messages.join(", or ") })))
  }
  const spec = decoded.right
  const refuse = (field: string, message: string) => Either.left([{ entry, name, path: `${entry}.${field}`, message }])
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

/** Reads `{ fleetDefaults, agents }` from a config object. */
export const readFleet = (config: unknown): Fleet => {
  const rejected: Array<Rejected> = []
  const sessions: Array<Spec> = []
  const templates: Array<Spec> = []
  if (!isRecord(config)) {
    return {
      sessions,
      templates,
      rejected: [{ entry: "config", name: null, path: "config", message: "expected an object" }]
    }
  }
  let defaults: Record<string, unknown> = {}
  const rawDefaults = config["fleetDefaults"]
  if (rawDefaults !== undefined) {
    if (isRecord(rawDefaults) && !("name" in rawDefaults)) defaults = rawDefaults
    else {
      rejected.push({
        entry: "fleetDefaults",
        name: null,
        path: "fleetDefaults",
        message: "expected an object of agent fields (without a name); defaults were ignored"
      })
    }
  }
  const agents = config["agents"] ?? []
  if (!Array.isArray(agents)) {
    rejected.push({ entry: "agents", name: null, path: "agents", message: "expected an array of agent entries" })
    return { sessions, templates, rejected }
  }
  const seen = new Set<string>()
  agents.forEach((input, index) => {
    const entry = `agents[${index}]`
    const result = validate(input, defaults, entry)
    if (Either.isLeft(result)) {
      rejected.push(...result.left)
      return
    }
    const spec = result.right
    if (seen.has(spec.name)) {
      rejected.push({ entry, name: spec.name, path: `${entry}.name`, message: `duplicate name "${spec.name}"` })
      return
    }
    seen.add(spec.name)
    if (spec.lifecycle === "session") sessions.push(spec)
    else templates.push(spec)
  })
  return { sessions, templates, rejected }
}
