/**
 * Schemas for the engine's answers that cross between hosts and that core keeps as types only (a broadcast's
 * outcomes, the async runs, the query of approvals and of runs, what unpark gives), and the
 * agent options as data (`WireOptions`: what a placement keeps and a spawn sends). Each is declared as a Schema
 * of core's own type, so the compiler holds the two together; the rest of the protocol uses core's AgentView.
 */
import type * as Agent from "@flotta/core/Agent"
import { Role } from "@flotta/core/AgentView"
import { exact } from "@flotta/core/Decode"
import { PermissionData } from "@flotta/core/Permission"
import { Outcome } from "@flotta/core/RunOutcome"
import { SandboxData } from "@flotta/core/Sandbox"
import { Duration, Option, Schema } from "effect"

/** A duration as the engine takes it (`"90 seconds"`, a number of ms, a Duration...). */
const DurationInput = Schema.declare(
  (u: unknown): u is Duration.DurationInput => Option.isSome(Duration.decodeUnknown(u)),
  { identifier: "DurationInput" }
)

/** A timeout on the wire: milliseconds. */
const Millis = Schema.transform(Schema.Number, DurationInput, {
  strict: true,
  decode: (ms) => Duration.millis(ms),
  encode: (input) => Duration.toMillis(input)
})

/**
 * The agent options as plain data another host can start the agent from (the timeout in ms, as `timeoutMs`);
 * a permission function stays on its host. Every other option (the host, progress callbacks) is left out.
 */
export const WireOptions = Schema.Struct({
  cwd: exact(Schema.String),
  model: exact(Schema.String),
  permission: exact(PermissionData),
  systemPrompt: exact(Schema.String),
  appendSystemPrompt: exact(Schema.String),
  timeout: Schema.optionalWith(Millis, { exact: true }).pipe(Schema.fromKey("timeoutMs")),
  env: exact(Schema.Record({ key: Schema.String, value: Schema.String })),
  role: exact(Role),
  resume: exact(Schema.String),
  extraArgs: exact(Schema.Array(Schema.String)),
  /** The sandbox as data (paths absolute): it goes with the agent to every host that runs it. */
  sandbox: exact(SandboxData),
  autoCompactAt: exact(Schema.Number)
})
export type WireOptions = typeof WireOptions.Type

/** The options as data: without a permission given as a function (it cannot leave its host). */
export const wireOptions = (options: Agent.AgentOptions): WireOptions => {
  const { permission, ...rest } = options
  return typeof permission === "function" || permission === undefined ? rest : { ...rest, permission }
}

/** The views core declares with the operations, kept here under their old names. */
export { ApprovalQuery, BroadcastOutcome, RunQuery, RunView, Unparked } from "@flotta/core/Operations"

/** An async run's outcome: a run's result, or a verify's report (core's Schemas). */
export const RunOutcome = Outcome
