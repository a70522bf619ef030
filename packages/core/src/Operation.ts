/**
 * What an operation of the fleet is (`Operation`: its name, Schemas, description and the derivation hints every
 * surface reads) and the views operations answer with that core keeps as types elsewhere (a broadcast's outcomes,
 * the queries of approvals and runs, the async runs, what unpark gives). The table itself is `Operations`.
 */
import { Duration, Schema } from "effect"
import type { Effect } from "effect"
import { Labels } from "./AgentOptions.js"
import { ErrorView } from "./AgentView.js"
import type { ApprovalQuery as ApprovalQueryType } from "./Approvals.js"
import { exact } from "./Decode.js"
import * as Errors from "./Errors.js"
import type * as RunList from "./RunList.js"
/** A turn's own time limit, as a method takes it. */
export interface AskOptions {
  /** When it expires the turn is interrupted and fails with TurnTimeout. */
  readonly timeout?: Duration.DurationInput
}

/** One agent's answer to a broadcast. */
export const BroadcastOutcome = Schema.Union(
  Schema.Struct({
    name: Schema.String,
    ok: Schema.Literal(true),
    turnId: Schema.String,
    text: Schema.String,
    costUsd: Schema.Number
  }),
  Schema.Struct({ name: Schema.String, ok: Schema.Literal(false), error: ErrorView })
)
export type BroadcastOutcome = typeof BroadcastOutcome.Type

export const ApprovalQuery: Schema.Schema<ApprovalQueryType> = Schema.Struct({
  agent: exact(Schema.String),
  all: exact(Schema.Boolean)
})

const RunState = Schema.Literal("running", "succeeded", "failed")

export const RunQuery: Schema.Schema<RunList.RunQuery> = Schema.Struct({
  state: exact(RunState),
  kind: exact(Schema.Literal("run", "verify")),
  limit: exact(Schema.Number),
  labels: exact(Labels)
})

export const RunView: Schema.Schema<RunList.RunView> = Schema.Struct({
  name: Schema.String,
  kind: Schema.Literal("run", "verify"),
  state: RunState,
  startedAt: Schema.String,
  finishedAt: Schema.NullOr(Schema.String),
  costUsd: Schema.NullOr(Schema.Number),
  worktree: Schema.NullOr(Schema.String),
  branch: Schema.NullOr(Schema.String),
  passed: Schema.NullOr(Schema.Boolean),
  error: Schema.NullOr(Schema.String),
  host: exact(Schema.String),
  labels: exact(Labels)
})

/** The agents that resume after an unpark. */
export const Unparked = Schema.Struct({ unparked: Schema.Array(Schema.String) })

/**
 * What any implementation may fail with besides the operation's own errors: a fleet over several hosts loses a
 * host, finds none live, or cannot read the store that says where an agent is.
 */
export const Everywhere = [Errors.HostLost, Errors.HostUnavailable, Errors.StoreUnavailable] as const

/** Where a cluster runs an operation. */
export type Route =
  /** On the host of the agent `agent(input)` names (here, when it names none). */
  | "agent"
  /** On every live host, the answers merged. */
  | "fleet"
  /** On the host that knows the async run (found by asking each). */
  | "run"
  /** A start: the cluster places the agent first (its own protocol). */
  | "start"

export interface Operation<
  Args extends ReadonlyArray<unknown>,
  I,
  II,
  O,
  OI,
  E,
  EI,
  V extends boolean = false,
  R extends Route = Route
> {
  readonly name: string
  readonly description: string
  readonly input: Schema.Schema<I, II>
  readonly output: Schema.Schema<O, OI>
  readonly error: Schema.Schema<E, EI>
  /** It changes nothing (MCP's readOnlyHint). */
  readonly readOnly: boolean
  readonly route: R
  /** The agent it acts on, if any: a cluster forwards it to that agent's host. */
  readonly agent: (input: I) => string | undefined
  /** The method's arguments as the input, and back. */
  readonly encode: (...args: Args) => I
  readonly decode: (input: I) => Args
  /** Its method is a value (an Effect), not a function: it takes nothing. */
  readonly value: V
  /**
   * Its MCP tool's name (`runResult` is `flotta_run_result`), or null when a tool of another operation serves it:
   * an MCP call is bounded in time, so `flotta_ask` and `flotta_wait` wait in bounded steps instead of blocking.
   */
  readonly tool: string | null
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Any = Operation<any, any, any, any, any, any, any, boolean, Route>

/** An operation's MCP tool name: `runResult` is `flotta_run_result`. */
export const snake = (name: string): string => `flotta_${name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`

/** An operation's errors: its own, and what any implementation may fail with (`Everywhere`). */
export const fails = <const Es extends ReadonlyArray<Schema.Schema.All>>(...errors: Es) =>
  Schema.Union(...errors, ...Everywhere)

export const op = <Args extends ReadonlyArray<unknown>>() =>
<
  I,
  II,
  O,
  OI,
  E,
  EI,
  const R extends Route,
  V extends boolean = false
>(spec: {
  readonly name: string
  readonly description: string
  readonly input: Schema.Schema<I, II>
  readonly output: Schema.Schema<O, OI>
  readonly error: Schema.Schema<E, EI>
  readonly readOnly: boolean
  readonly route: R
  readonly agent?: (input: I) => string | undefined
  readonly encode: (...args: Args) => I
  readonly decode: (input: I) => Args
  readonly value?: V
  readonly tool?: null
}): Operation<
  Args,
  I,
  II,
  O,
  OI,
  E,
  EI,
  V,
  R
> => ({
  name: spec.name,
  description: spec.description,
  input: spec.input,
  output: spec.output,
  error: spec.error,
  readOnly: spec.readOnly,
  route: spec.route,
  agent: spec.agent ?? (() => undefined),
  encode: spec.encode,
  decode: spec.decode,
  value: (spec.value ?? false) as V,
  tool: spec.tool === null ? null : snake(spec.name)
})

export type ArgsOf<Op> = Op extends { readonly decode: (input: never) => infer Args extends ReadonlyArray<unknown> } ?
  Args
  : never
export type InputOf<Op> = Op extends { readonly input: { readonly Type: infer I } } ? I : never
export type OutputOf<Op> = Op extends { readonly output: { readonly Type: infer O } } ? O : never
export type ErrorOf<Op> = Op extends { readonly error: { readonly Type: infer E } } ? E : never

/** An operation as a method of `Flotta`: a function of its arguments, or (taking none) an Effect. */
export type Method<Op> = Op extends { readonly value: true } ? Effect.Effect<OutputOf<Op>, ErrorOf<Op>>
  : (...args: ArgsOf<Op>) => Effect.Effect<OutputOf<Op>, ErrorOf<Op>>
