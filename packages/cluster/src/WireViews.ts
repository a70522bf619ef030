/**
 * Schemas for the engine's answers that cross between hosts and that core keeps as types only (a broadcast's
 * outcomes, the async runs, the query of approvals and of runs, what unpark gives). Each is declared as a Schema
 * of core's own type, so the compiler holds the two together; the rest of the protocol uses core's AgentView, and
 * the agent options (what a placement keeps and a spawn sends) are core's one Schema of them, `AgentOptions`.
 */
import { Labels } from "@flotta/core/AgentOptions"
import { ErrorView } from "@flotta/core/AgentView"
import type { ApprovalQuery as CoreApprovalQuery } from "@flotta/core/Approvals"
import { exact } from "@flotta/core/Decode"
import type * as Flotta from "@flotta/core/Flotta"
import type * as RunList from "@flotta/core/RunList"
import { Outcome } from "@flotta/core/RunOutcome"
import { Schema } from "effect"

export const BroadcastOutcome: Schema.Schema<Flotta.BroadcastOutcome> = Schema.Union(
  Schema.Struct({
    name: Schema.String,
    ok: Schema.Literal(true),
    turnId: Schema.String,
    text: Schema.String,
    costUsd: Schema.Number
  }),
  Schema.Struct({ name: Schema.String, ok: Schema.Literal(false), error: ErrorView })
)

export const ApprovalQuery: Schema.Schema<CoreApprovalQuery> = Schema.Struct({
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

/** An async run's outcome: a run's result, or a verify's report (core's Schemas). */
export const RunOutcome = Outcome

/** The agents that resume after an unpark. */
export const Unparked = Schema.Struct({ unparked: Schema.Array(Schema.String) })
