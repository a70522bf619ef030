/**
 * The answers of the fleet's MCP tools as the client commands decode them: the mcp package's output Schemas (the
 * engine's views), one per tool the commands call, so that nothing a serve sends is cast.
 */
import { ApprovalSchema } from "@flotta/core/Approvals"
import { RunDiff } from "@flotta/core/RunDiff"
import * as Tool from "@flotta/mcp/Schemas"
import { Schema } from "effect"

export const { AgentInfo, BroadcastResult, ReportEntry, RunView, Started, WaitResult } = Tool

export const List = Schema.Struct({ agents: Schema.Array(Tool.AgentInfo) })
export const Status = Schema.Struct({ name: Schema.String, ...Tool.StatusView.fields })
export const Prompted = Schema.Struct({ name: Schema.String, turnId: Schema.String, status: Tool.StatusView })
export const Result = Schema.Struct({ name: Schema.String, result: Tool.TurnResult })
export const Closed = Schema.Struct({ name: Schema.String, closed: Schema.Boolean })
export const Interrupted = Schema.Struct({
  name: Schema.String,
  interrupted: Schema.Boolean,
  turnId: Schema.NullOr(Schema.String)
})
export const Hibernated = Schema.Struct({ name: Schema.String, hibernated: Schema.Boolean, status: Tool.StatusView })
export const Woken = Schema.Struct({ name: Schema.String, woken: Schema.Boolean, info: Tool.AgentInfo })
export const Unparked = Schema.Struct({
  unparked: Schema.Array(Schema.String),
  parking: Schema.Array(Tool.ParkedGroup)
})
export const Reports = Schema.Struct({ entries: Schema.Array(Tool.ReportEntry), next: Schema.Number })
export const Transcript = Schema.Struct({
  name: Schema.String,
  total: Schema.Number,
  turns: Schema.Array(Tool.TurnRecord),
  /** The agent is closed: its transcript was read from the store. */
  closed: Schema.optionalWith(Tool.Closed, { exact: true })
})
export const Runs = Schema.Struct({ runs: Schema.Array(Tool.RunView) })
export const RunOutcome = Schema.Struct({
  name: Schema.String,
  kind: Schema.Literal("run", "verify"),
  result: Schema.Union(Tool.RunResult, Tool.VerifyReport)
})
export const Diff = RunDiff
export const Approvals = Schema.Struct({ approvals: Schema.Array(ApprovalSchema) })
export const Decided = ApprovalSchema
