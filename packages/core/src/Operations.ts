/**
 * The fleet's request/response operations, each declared once (see `Operation`). The `Flotta` interface, the
 * Promise facade, the cluster's protocol, the MCP tools and the CLI's calls are derived from this table; streams,
 * subscriptions and options that are functions are not operations and stay members of `Flotta` of their own. Each
 * says how its method's positional arguments become its input (`encode`) and back (`decode`).
 */
import { Effect, Schema } from "effect"
import type { AgentOptions, ForkOptions } from "./Agent.js"
import { dataOf, Labels } from "./AgentOptions.js"
import type { ListQuery } from "./AgentOptions.js"
import { AgentInfo, AgentStatusView, TurnRecord, TurnResult } from "./AgentView.js"
import { ApprovalDecisionSchema, ApprovalSchema } from "./Approvals.js"
import type { ApprovalDecision, ApprovalQuery as ApprovalQueryType } from "./Approvals.js"
import { CostQuery, CostReport } from "./Costs.js"
import { exact } from "./Decode.js"
import * as Errors from "./Errors.js"
import {
  askOptions,
  byName,
  ForkInput,
  millis,
  NameField,
  onName,
  RunName,
  SpawnInput,
  turn,
  TurnErrors,
  turnOf
} from "./internal/operationInputs.js"
import type { Any, AskOptions, Method, Route } from "./Operation.js"
import { ApprovalQuery, BroadcastOutcome, fails, op, RunQuery, RunView, snake, Unparked } from "./Operation.js"
import { NoDiff, RunDiff } from "./RunDiff.js"
import type * as RunList from "./RunList.js"
import { Outcome } from "./RunOutcome.js"

export type { Any, ArgsOf, AskOptions, ErrorOf, InputOf, Method, Operation, OutputOf, Route } from "./Operation.js"
export { ApprovalQuery, BroadcastOutcome, RunQuery, RunView, Unparked } from "./Operation.js"

/** The table. Its keys are the methods' names. */
export const operations = {
  spawn: op<[name: string, options?: AgentOptions]>()({
    name: "spawn",
    description: "Start a long-lived claude agent under a unique name and return its info once it is ready.",
    input: SpawnInput,
    output: AgentInfo,
    error: fails(
      Errors.InvalidName,
      Errors.InvalidSpec,
      Errors.AgentAlreadyExists,
      Errors.SpawnFailed,
      Errors.AgentClosed,
      Errors.SandboxUnavailable
    ),
    readOnly: false,
    route: "start",
    agent: (input) => input.name,
    encode: (name, options = {}) => ({ name, options: dataOf(options) }),
    decode: (input) => [input.name, input.options]
  }),
  fork: op<[source: string, name: string, options?: ForkOptions]>()({
    name: "fork",
    description: "Start a new session agent whose conversation is another's up to one of its turns (default: its " +
      "last that succeeded), under a session id of its own. The source is left as it is.",
    input: ForkInput,
    output: AgentInfo,
    error: fails(
      Errors.InvalidName,
      Errors.InvalidSpec,
      Errors.AgentAlreadyExists,
      Errors.AgentNotFound,
      Errors.SpawnFailed,
      Errors.AgentClosed,
      Errors.TurnPending,
      Errors.NoResult,
      Errors.SandboxUnavailable,
      Errors.CannotFork
    ),
    readOnly: false,
    route: "start",
    agent: (input) => input.source,
    encode: (source, name, { at, ...options } = {}) => ({
      source,
      name,
      ...(at === undefined ? {} : { at }),
      options: dataOf(options)
    }),
    decode: (
      input
    ) => [input.source, input.name, { ...input.options, ...(input.at === undefined ? {} : { at: input.at }) }]
  }),
  ask: op<[name: string, text: string, options?: AskOptions]>()({
    ...turn,
    name: "ask",
    description: "Prompt an agent and wait for the reply text.",
    output: Schema.String,
    error: fails(Errors.AgentNotFound, Errors.AgentClosed, Errors.InvalidSpec, Errors.NoResult, ...TurnErrors),
    readOnly: false
  }),
  askResult: op<[name: string, text: string, options?: AskOptions]>()({
    ...turn,
    name: "askResult",
    tool: null,
    description: "Prompt an agent and wait for the whole result of its turn.",
    output: TurnResult,
    error: fails(Errors.AgentNotFound, Errors.AgentClosed, Errors.InvalidSpec, Errors.NoResult, ...TurnErrors),
    readOnly: false
  }),
  prompt: op<[name: string, text: string, options?: AskOptions]>()({
    ...turn,
    name: "prompt",
    description: "Queue a prompt for an agent and return its turn id at once.",
    output: Schema.String,
    error: fails(Errors.AgentNotFound, Errors.AgentClosed, Errors.InvalidSpec),
    readOnly: false
  }),
  wait: op<[name: string, turnId: string]>()({
    ...turnOf,
    name: "wait",
    description: "Wait for a turn's result; interrupting the wait cancels the turn.",
    output: TurnResult,
    error: fails(Errors.AgentNotFound, Errors.NoResult, ...TurnErrors),
    readOnly: true
  }),
  watch: op<[name: string, turnId: string]>()({
    ...turnOf,
    name: "watch",
    tool: null,
    description: "Wait for a turn's result; interrupting the wait only stops the waiting.",
    output: TurnResult,
    error: fails(Errors.AgentNotFound, Errors.NoResult, ...TurnErrors),
    readOnly: true
  }),
  status: op<[name: string]>()({
    ...onName,
    name: "status",
    description: "An agent's status: current turn, queue length, turns so far, context use.",
    output: AgentStatusView,
    error: fails(Errors.AgentNotFound),
    readOnly: true
  }),
  result: op<[name: string, turnId?: string]>()({
    ...turnOf,
    name: "result",
    description: "A turn's result (default: the agent's latest), without waiting: TurnPending while it runs.",
    encode: (name, turnId = "latest") => ({ name, turnId }),
    decode: (input) => [input.name, input.turnId],
    output: TurnResult,
    error: fails(Errors.AgentNotFound, Errors.TurnPending, Errors.NoResult, ...TurnErrors),
    readOnly: true
  }),
  transcript: op<[name: string]>()({
    ...onName,
    name: "transcript",
    description: "An agent's turns, oldest first: a live one's, or a closed one's as the store still has them.",
    output: Schema.Array(TurnRecord),
    error: fails(Errors.AgentNotFound),
    readOnly: true
  }),
  info: op<[name: string]>()({
    ...onName,
    name: "info",
    description: "One agent's details: status, pid, session id, cwd, model, permission, totals, restarts. A " +
      "closed agent's too, read from the store (status closed, closedReason, closedAt) until retention removes it.",
    output: AgentInfo,
    error: fails(Errors.AgentNotFound),
    readOnly: true
  }),
  interrupt: op<[name: string]>()({
    ...onName,
    name: "interrupt",
    description: "Interrupt the agent's turn in flight (TurnInterrupted); queued turns go on. False when nothing " +
      "was running.",
    output: Schema.Boolean,
    error: fails(Errors.AgentNotFound),
    readOnly: false
  }),
  close: op<[name: string]>()({
    ...onName,
    name: "close",
    description: "Stop an agent: its queued and running turns fail with AgentClosed and its process ends.",
    output: Schema.Void,
    error: fails(Errors.AgentNotFound),
    readOnly: false
  }),
  compact: op<[name: string, instructions?: string]>()({
    ...byName,
    route: "agent",
    name: "compact",
    description: "Queue a compaction of a session's conversation as its next turn (what to keep in " +
      "`instructions`); its turn id.",
    input: Schema.Struct({ name: Schema.String, instructions: exact(Schema.String) }),
    encode: (name, instructions) => ({ name, ...(instructions === undefined ? {} : { instructions }) }),
    decode: (input) => input.instructions === undefined ? [input.name] : [input.name, input.instructions],
    output: Schema.String,
    error: fails(Errors.AgentNotFound, Errors.AgentClosed, Errors.InvalidSpec),
    readOnly: false
  }),
  clear: op<[name: string]>()({
    ...onName,
    name: "clear",
    description: "Queue a fresh conversation as a session's next turn: a new session under the same name; its " +
      "turn id.",
    output: Schema.String,
    error: fails(Errors.AgentNotFound, Errors.AgentClosed, Errors.InvalidSpec),
    readOnly: false
  }),
  hibernate: op<[name: string]>()({
    ...onName,
    name: "hibernate",
    description: "End a session's process cleanly and keep everything else, until a prompt or wake. False when " +
      "it was asleep already.",
    output: Schema.Boolean,
    error: fails(Errors.AgentNotFound, Errors.CannotHibernate),
    readOnly: false
  }),
  wake: op<[name: string]>()({
    ...onName,
    name: "wake",
    description: "Wake a hibernated session and wait until its process is up; false when it was not asleep.",
    output: Schema.Boolean,
    error: fails(Errors.AgentNotFound, Errors.SpawnFailed, Errors.AgentClosed, Errors.SandboxUnavailable),
    readOnly: false
  }),
  unpark: op<[options?: { readonly agent?: string }]>()({
    name: "unpark",
    description: "Unpark by hand: one agent (the rest of its credentials' group stays parked), or every parked " +
      "agent, staggered. The agents that resume.",
    input: Schema.Struct({ agent: exact(Schema.String) }),
    encode: (options = {}) => options,
    decode: (input) => [input],
    agent: (input) => input.agent,
    route: "agent",
    output: Unparked,
    error: fails(Errors.AgentNotFound),
    readOnly: false
  }),
  label: op<[name: string, labels: Labels]>()({
    ...byName,
    route: "agent",
    name: "label",
    description: "Change a live agent's labels (each later turn's cost is booked under them); its info.",
    input: Schema.Struct({ name: NameField, labels: Labels }),
    encode: (name, labels) => ({ name, labels }),
    decode: (input) => [input.name, input.labels],
    output: AgentInfo,
    error: fails(Errors.AgentNotFound, Errors.AgentClosed),
    readOnly: false
  }),
  list: op<[query?: ListQuery]>()({
    name: "list",
    description: "Every live agent (runs in progress included) with its status, current turn and totals; " +
      "`labels` keeps those with every one of these labels.",
    input: Schema.Struct({ labels: exact(Labels) }),
    encode: (query = {}) => query,
    decode: (input) => [input],
    output: Schema.Array(AgentInfo),
    error: fails(),
    readOnly: true,
    route: "fleet"
  }),
  broadcast: op<[text: string, options?: AskOptions]>()({
    name: "broadcast",
    description: "Prompt every live session at once and wait for each reply; one slow or failing agent never " +
      "holds up the others.",
    input: Schema.Struct({ text: Schema.String, timeoutMs: exact(Schema.Number) }),
    encode: (text, options = {}) => ({ text, ...millis(options.timeout) }),
    decode: (input) => [input.text, askOptions(input.timeoutMs)],
    output: Schema.Array(BroadcastOutcome),
    error: fails(),
    readOnly: false,
    route: "fleet"
  }),
  approvals: op<[query?: ApprovalQueryType]>()({
    name: "approvals",
    description: "Pending approvals, oldest first (with `all`, also the ones that ended lately).",
    input: Schema.Struct({ query: ApprovalQuery }),
    encode: (query = {}) => ({ query }),
    decode: (input) => [input.query],
    output: Schema.Array(ApprovalSchema),
    error: fails(),
    readOnly: true,
    route: "fleet"
  }),
  decide: op<[id: string, decision: ApprovalDecision]>()({
    name: "decide",
    description: "A human's decision on a pending approval: the waiting tool call goes on, or is denied.",
    input: Schema.Struct({ id: Schema.String, decision: ApprovalDecisionSchema }),
    encode: (id, decision) => ({ id, decision }),
    decode: (input) => [input.id, input.decision],
    output: ApprovalSchema,
    error: fails(Errors.ApprovalNotFound, Errors.ApprovalExpired, Errors.InvalidSpec),
    readOnly: false,
    route: "fleet"
  }),
  runs: op<[query?: RunList.RunQuery]>()({
    name: "runs",
    description: "The async runs and verifies, running and finished, newest first.",
    input: Schema.Struct({ query: RunQuery }),
    encode: (query = {}) => ({ query }),
    decode: (input) => [input.query],
    output: Schema.Array(RunView),
    error: fails(),
    readOnly: true,
    route: "fleet"
  }),
  runResult: op<[name: string]>()({
    ...RunName,
    name: "runResult",
    description: "An async run's (or verify's) outcome: its result, TurnPending while it runs, or its failure.",
    output: Outcome,
    error: fails(...Errors.RunErrorSchema.members, Errors.TurnPending, Errors.RunNotFound),
    readOnly: true
  }),
  awaitRun: op<[name: string]>()({
    ...RunName,
    name: "awaitRun",
    tool: null,
    description: "Wait for an async run (or verify) to finish: its outcome.",
    output: Outcome,
    error: fails(...Errors.RunErrorSchema.members, Errors.RunNotFound),
    readOnly: true
  }),
  diff: op<[name: string]>()({
    ...RunName,
    name: "diff",
    description: "What a run in a worktree changed against the commit it started from: each file with lines " +
      "added and removed, the totals, and the patch (cut at 256 KiB: `truncated`, `patchBytes` its full size). " +
      "Recorded when the run ends and kept after its worktree is removed; while it goes on, its changes so far " +
      "(`running`). A run without a worktree is NoDiff, an unknown one RunNotFound.",
    output: RunDiff,
    error: fails(Errors.RunNotFound, NoDiff, Errors.WorktreeFailed),
    readOnly: true
  }),
  costs: op<[query?: CostQuery]>()({
    name: "costs",
    description: "Spend in a window (since, until), grouped by agent, run, model, day, hour or a label (`label:KEY`).",
    input: CostQuery,
    encode: (query = {}) => query,
    decode: (input) => [input],
    output: CostReport,
    error: fails(Errors.InvalidSpec),
    readOnly: true,
    route: "fleet"
  })
} as const

export type Operations = typeof operations
export type Name = keyof Operations

/** Every operation as a method: what the `Flotta` interface is made of. */
export type Methods = { readonly [K in Name]: Method<Operations[K]> }

/** The operations' names, in the table's order. */
export const names = Object.keys(operations) as ReadonlyArray<Name>

/** The names of the operations a cluster runs on `route`. */
export type Routed<R extends Route> = { [K in Name]: Operations[K]["route"] extends R ? K : never }[Name]

/** The operations a cluster runs on `route`, in the table's order. */
export const routed = <R extends Route>(...routes: ReadonlyArray<R>): ReadonlyArray<Routed<R>> =>
  names.filter((name): name is Routed<R> => routes.some((route) => route === operations[name].route))

/** A function-valued method (every operation but those that take nothing). */
export type FunctionName = { [K in Name]: Operations[K]["value"] extends true ? never : K }[Name]

/**
 * An object of methods built by name over the table. Its type is the one the caller names: each entry is built
 * from its operation (its arguments, its output, its errors), which the compiler cannot follow through a loop.
 */
const byNames = <T>(entries: ReadonlyArray<readonly [string, unknown]>): T => Object.fromEntries(entries) as T

/**
 * Methods built by one generic function over the table (a wire's forward, a facade's call): `make` gets the
 * operation and gives its method. What each method takes and gives is the table's, so the result has its types.
 */
export const implement = <K extends FunctionName>(
  selected: ReadonlyArray<K>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  make: (name: K, op: Any) => (...args: ReadonlyArray<any>) => Effect.Effect<any, any>
): Pick<Methods, K> => byNames<Pick<Methods, K>>(selected.map((name) => [name, make(name, operations[name])]))

/** Runs an operation's method on `fleet` with its positional arguments (none for a method that is an Effect). */
export const apply = Effect.fnUntraced(function*(fleet: Methods, name: Name, args: ReadonlyArray<unknown>) {
  const method: unknown = fleet[name]
  // Each method takes its operation's arguments: `args` are those, as the caller's own signature typed them.
  return yield* operations[name].value
    ? method as Effect.Effect<unknown, unknown>
    : (method as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>)(...args)
})

/** Runs an operation's method on `fleet` from its input (the arguments `decode` gives back). */
export const invoke = Effect.fnUntraced(function*(fleet: Methods, name: Name, input: unknown) {
  const op: Any = operations[name]
  return yield* apply(fleet, name, op.value ? [] : op.decode(input))
})

/** The MCP tool that serves an operation: its own (`runResult` is `flotta_run_result`). */
export const toolName = (name: Exclude<Name, "askResult" | "watch" | "awaitRun">): string => snake(name)
