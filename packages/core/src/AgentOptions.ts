/**
 * An agent's options, declared once. `AgentOptions` is the Schema of the options that are data: what the store
 * keeps (`StoredOptions`), what crosses between the hosts of a cluster, what MCP's spawn takes and what a config
 * entry shares with them. The options a caller gives (the `AgentOptions` type) are its Type plus the members that
 * are not data: a permission given as a function, a progress callback, and the host to run on.
 */
import type { Duration } from "effect"
import { Duration as D, Option, Schema } from "effect"
import { exact } from "./Decode.js"
import * as Permission from "./Permission.js"
import { SandboxData } from "./Sandbox.js"
import type { Activity } from "./ToolView.js"

export const Role = Schema.Literal("member", "manager")
export type Role = typeof Role.Type

/** A session converses across turns; a run takes one turn. */
export const Lifecycle = Schema.Literal("session", "run")
export type Lifecycle = typeof Lifecycle.Type

export const BudgetPer = Schema.Literal("day", "life")
export type BudgetPer = typeof BudgetPer.Type

/** Free-form `key: value` tags: the fleet groups spend and filters lists by them (a scheduler can name what started an agent). */
export const Labels = Schema.Record({ key: Schema.String, value: Schema.String })
export type Labels = typeof Labels.Type

/** Whether `labels` has every one of `wanted` (no filter: every one has): how `list` and `runs` filter. */
export const hasLabels = (labels: Labels | undefined, wanted: Labels | undefined): boolean =>
  wanted === undefined || Object.entries(wanted).every(([key, value]) => labels?.[key] === value)

/** What `list` is asked: only the agents with every one of these labels (`{ team: "a" }`). */
export interface ListQuery {
  readonly labels?: Labels
}

/** A duration as the engine takes it (`"90 seconds"`, a number of ms, a Duration...). */
export const DurationInput = Schema.declare(
  (u: unknown): u is Duration.DurationInput => Option.isSome(D.decodeUnknown(u)),
  { identifier: "DurationInput" }
)

/** A duration as data: milliseconds. */
export const Millis = Schema.transform(Schema.Number, DurationInput, {
  strict: true,
  decode: (ms) => D.millis(ms),
  encode: (input) => D.toMillis(input)
})

const NonEmpty = Schema.String.pipe(Schema.minLength(1))
const Env = Schema.Record({ key: Schema.String, value: Schema.String })
/** A share of the context window, in percent. */
export const Percent = Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(100))
const Dollars = Schema.Number.pipe(Schema.positive())

/**
 * The options that the store keeps as they are given (every data option but the cwd, permission and timeout,
 * which it keeps resolved, and `resume` and `lifecycle`, which are the agent row's own).
 */
const keptFields = {
  model: exact(NonEmpty),
  systemPrompt: exact(Schema.String),
  appendSystemPrompt: exact(Schema.String),
  /** Added to the inherited environment. */
  env: exact(Env),
  role: exact(Role),
  /** Further CLI flags, placed after the ones the options produce. */
  extraArgs: exact(Schema.Array(Schema.String)),
  /** A turn that succeeds without `structured_output` fails (the CLI can report success without it). */
  expectStructuredOutput: exact(Schema.Boolean),
  /**
   * Run its Bash tool in the CLI's OS sandbox: `true` writes only in its cwd (a run's worktree) and reaches no
   * network; `{ network: { allow: [hosts] }, writable: [paths] }` adds hosts and paths (see `Sandbox`).
   */
  sandbox: exact(SandboxData),
  /** A compaction is queued once a turn leaves its context fuller than this percentage. */
  autoCompactAt: exact(Percent),
  /** Stream its text as the model writes it (`--include-partial-messages`). */
  stream: exact(Schema.Boolean),
  /** A session's budget in dollars, `budgetPer` UTC day or for its life (default): over it, it takes no new turn. */
  maxBudgetUsd: exact(Dollars),
  budgetPer: exact(BudgetPer),
  /** Its labels: kept with it and with each turn's cost, so spend can be grouped by any of them. */
  labels: exact(Labels)
} as const

/**
 * The agent options as data, the one Schema of them. The timeout is encoded as `timeoutMs`; a permission is
 * one of its data forms (a function stays on its host, outside this Schema).
 */
export const AgentOptions = Schema.Struct({
  cwd: exact(NonEmpty),
  permission: exact(Permission.PermissionData),
  /** Per-turn default (180 s unless the fleet says otherwise); milliseconds as data. */
  timeout: Schema.optionalWith(Millis, { exact: true }).pipe(Schema.fromKey("timeoutMs")),
  /** Continue an earlier conversation (a session id from a run or another agent). */
  resume: exact(NonEmpty),
  /** A run takes one turn and does not report `turn_started` (default: session). */
  lifecycle: exact(Lifecycle),
  ...keptFields
}).annotations({ identifier: "AgentOptions" })

/** The data options (the Schema's Type). */
export type DataOptions = typeof AgentOptions.Type

/** What the callers give: the data options, and those that are not data. */
export type AgentOptions = Omit<DataOptions, "permission"> & {
  readonly permission?: Permission.Policy
  /** Told what the agent is doing as its turns stream (a tool it calls, text it writes): for progress displays. */
  readonly onActivity?: (activity: Activity) => void
  /** The host to run it on, in a fleet spread over several hosts (`@flotta/cluster`); a single fleet refuses it. */
  readonly host?: string
}

/** The members of `AgentOptions` that are not data: they never leave the process. */
export type NotData = "onActivity" | "host"

/** Holds only when `A` and `B` are the same set of keys: a missing or an extra option fails the build. */
export type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true
  : { readonly missing: Exclude<keyof A, keyof B>; readonly extra: Exclude<keyof B, keyof A> }

// Every option a caller can give is either in the Schema or named as not data.
const everyOptionIsData: SameKeys<Omit<AgentOptions, NotData>, DataOptions> = true
void everyOptionIsData

/** The options as data: a permission given as a function, the host and the callbacks are left out. */
export const dataOf = (options: AgentOptions): DataOptions => {
  const { host: _host, onActivity: _onActivity, permission, ...rest } = options
  return typeof permission === "function" || permission === undefined ? rest : { ...rest, permission }
}

/** The options as the store keeps them for an agent: resolved cwd, permission named, timeout in ms. */
export const StoredOptions = Schema.Struct({
  cwd: Schema.String,
  permission: Permission.Described,
  timeoutMs: Schema.Number,
  ...keptFields
})
export type StoredOptions = typeof StoredOptions.Type

// The store keeps every data option but those that are the agent row's own, the timeout as `timeoutMs`.
const everyOptionIsStored: SameKeys<
  Omit<DataOptions, "resume" | "lifecycle" | "timeout"> & { readonly timeoutMs: number },
  StoredOptions
> = true
void everyOptionIsStored

const KEPT = Object.keys(keptFields) as ReadonlyArray<keyof typeof keptFields>
type Kept = Pick<DataOptions, typeof KEPT[number]>

/** The kept options that are set (an absent one stays absent, as `exactOptionalPropertyTypes` wants). */
export const keptOf = (from: Kept): Kept =>
  Object.fromEntries(KEPT.flatMap((key) => (from[key] === undefined ? [] : [[key, from[key]]])))
